import { z } from "zod";
import { prisma } from "../db";
import { env } from "../env";

/** `GET /api/v1/wallet` (contract section 4), and with `?at=` (section 13.4); the OpenAPI document's `Wallet`. */
export const walletViewSchema = z
  .strictObject({
    balance: z.int().min(0).meta({ description: "Integer minor units." }),
    currency: z.string().regex(/^[A-Z]{3}$/),
    debt: z.int().min(1).optional().meta({
      description:
        "Integer minor units a chargeback took that the balance could not cover; present only while a debt is open. Credits repay it first; payments are refused with 402 debt_outstanding meanwhile.",
    }),
    at: z
      .string()
      .optional()
      .meta({
        description:
          "Present only when asked with `?at=`: the instant, exactly as sent; `balance` and `debt` are then those after " +
          "every posting to the wallet account at or before it (contract section 13.4).",
      }),
  })
  .meta({ id: "Wallet" });
export type WalletView = z.infer<typeof walletViewSchema>;

/**
 * The caller's balance (contract section 4: `GET /api/v1/wallet`), and the open debt when there is one (contract
 * section 11). A user who has never been credited has no wallet row yet: the balance is 0 in the wallet currency.
 */
export async function getWallet(userId: string): Promise<WalletView> {
  const wallet = await prisma().wallet.findUnique({
    where: { userId },
    select: { balanceMinor: true, debtMinor: true, currency: true },
  });
  if (!wallet) return { balance: 0, currency: env().WALLET_CURRENCY };
  // balance_minor and debt_minor are CHECKed below 2^53, so the conversion from BigInt is exact.
  const view: WalletView = { balance: Number(wallet.balanceMinor), currency: wallet.currency };
  return wallet.debtMinor > 0n ? { ...view, debt: Number(wallet.debtMinor) } : view;
}
