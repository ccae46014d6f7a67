/**
 * "No charge without room for its credit" (contract section 5, case C15): the answer of an operation refused for the
 * wallet's ceiling, MAX_BALANCE_MINOR (contract section 9). The room itself is decided in PostgreSQL under the wallet
 * row's lock, by the statement that claims the operation (ledger_claim_topup, ledger_decide_reward).
 */
import type { StoredResponse } from "../ledger";
import { problemStoredResponse } from "../problems";
import { formatMinor } from "../money";

/**
 * The stored first response of an operation refused for the ceiling: `422 balance_limit_exceeded`, stored and
 * replayed like a 402 (contract sections 3 and 5). `amountMinor`, `maxBalanceMinor`: minor units of `currency`.
 */
export function balanceLimitResponse(amountMinor: number, currency: string, maxBalanceMinor: number): StoredResponse {
  return problemStoredResponse(
    "balance_limit_exceeded",
    `Crediting ${formatMinor(amountMinor)} ${currency} would take the balance over its limit of ` +
      `${formatMinor(maxBalanceMinor)} ${currency}; nothing was charged or credited.`,
  );
}
