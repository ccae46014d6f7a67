/** An ISO time as `YYYY-MM-DD HH:MM:SS UTC` for the admin tables; "—" for none. */
export function shortTime(iso: string | null): string {
  return iso ? `${iso.replace("T", " ").slice(0, 19)} UTC` : "—";
}
