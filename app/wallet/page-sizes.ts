/**
 * Rows per page on the wallet page: the history shows the API's default page (50), one line each; "Show more" loads
 * the next page of the same size. The newest 20 top-ups are read to follow the top-up form's answer live.
 */
export const TOPUPS_PAGE_SIZE = 20;
export const STATEMENT_PAGE_SIZE = 50;
