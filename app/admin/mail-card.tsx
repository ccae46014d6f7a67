/**
 * The admin page's Mail card (docs/decisions/054-mail-outbox.md): how many messages wait, are being sent, failed or
 * have an unknown outcome, and the newest failed and unknown ones, which will not go out by themselves. Times in UTC.
 */
import type { MailOverview } from "@/lib/mail/read-mail-overview";
import { UtcTime } from "./utc-time";

/** Each kind of message, in words. */
const KIND_WORDS = {
  receipt: "Receipt",
  address_check: "Address check",
  password_reset: "Password reset link",
  password_changed: "Password changed notice",
  new_device: "New device notice",
} as const;

/** Each state, in words. */
const COUNT_WORDS = [
  ["pending", "Waiting"],
  ["sending", "Being sent"],
  ["failed", "Failed"],
  ["unknown", "Outcome unknown"],
] as const;

export function MailCard({ overview }: { overview: MailOverview }) {
  return (
    <section className="card" aria-labelledby="mail-heading" data-testid="mail-card">
      <h2 id="mail-heading">Mail</h2>
      <dl className="counters">
        {COUNT_WORDS.map(([status, words]) => (
          <div key={status}>
            <dt>{words}</dt>
            <dd data-count={`mail-${status}`}>{overview.counts[status]}</dd>
          </div>
        ))}
      </dl>
      {overview.attention.length === 0 ? (
        <p>No message failed or has an unknown outcome.</p>
      ) : (
        <>
          <p className="muted">
            Not sent again by themselves: an unknown outcome may have reached the person (a message is never sent
            twice); a failed one was refused by the mail server or given up after a day of tries.
          </p>
          <table className="cards admin-table" data-testid="mail-attention">
            <thead>
              <tr>
                <th scope="col">Message</th>
                <th scope="col">To</th>
                <th scope="col">State</th>
                <th scope="col">Queued</th>
              </tr>
            </thead>
            <tbody>
              {overview.attention.map((mail) => (
                <tr key={mail.id}>
                  <td data-label="Message">{KIND_WORDS[mail.kind]}</td>
                  <td data-label="To" className="clip">
                    {mail.email}
                  </td>
                  <td data-label="State">
                    {mail.status === "unknown" ? "Outcome unknown" : "Failed"} after {mail.attempts}{" "}
                    {mail.attempts === 1 ? "try" : "tries"}
                    {mail.lastError ? <span className="reason">{mail.lastError}</span> : null}
                  </td>
                  <td data-label="Queued">
                    <UtcTime iso={mail.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
