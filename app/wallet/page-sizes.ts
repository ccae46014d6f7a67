/**
 * Rows per page on the wallet page: 20 top-ups keep the forms and the statement in view; a statement page is the
 * API's default page (50). "Show more" loads the next page of the same size.
 */
export const TOPUPS_PAGE_SIZE = 20;
export const STATEMENT_PAGE_SIZE = 50;
