/** The admin timeline page of one payout (app/admin/payouts/[userId]/[refId]). */
export function payoutHref(row: { userId: string; refId: string }): string {
  return `/admin/payouts/${encodeURIComponent(row.userId)}/${encodeURIComponent(row.refId)}`;
}
