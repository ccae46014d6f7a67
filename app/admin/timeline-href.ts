/** The admin timeline page of one top-up (app/admin/topups/[userId]/[refId]). */
export function timelineHref(row: { userId: string; refId: string }): string {
  return `/admin/topups/${encodeURIComponent(row.userId)}/${encodeURIComponent(row.refId)}`;
}
