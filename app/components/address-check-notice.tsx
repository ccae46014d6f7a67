/**
 * "Confirm your address" on the wallet page, while the signed-in user has not opened the link sign-up mailed
 * (docs/decisions/054-mail-outbox.md); nothing once the address is confirmed.
 */
import { isAddressConfirmed } from "@/lib/auth/is-address-confirmed";
import { AddressCheckResend } from "./address-check-resend";

export async function AddressCheckNotice({ userId, email }: { userId: string; email: string }) {
  if (await isAddressConfirmed(userId)) return null;
  return (
    <section className="card address-check" aria-labelledby="address-check-heading" data-testid="address-check">
      <h2 id="address-check-heading">Confirm your email address</h2>
      <p>
        We mailed a link to <strong>{email}</strong>. Open it so that we can reach you about your money.
      </p>
      <AddressCheckResend />
    </section>
  );
}
