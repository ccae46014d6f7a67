import { z } from "zod";
import { prisma } from "../db";
import { env } from "../env";

/** `GET /api/v1/wallet` (contract section 4); the OpenAPI document's `Wallet`. */
export const walletViewSchema = z
  .strictObject({
    balance: z.int().min(0).meta({ description: "Integer minor units." }),
    currency: z.string().regex(/^[A-Z]{3}$/),
  })
  .meta({ id: "Wallet" });
export type WalletView = z.infer<typeof walletViewSchema>;

/**
 * The caller's balance (contract section 4: `GET /api/v1/wallet`). A user who has never been credited has
 * no wallet row yet: the balance is 0 in the wallet currency.
 */
export async function getWallet(userId: string): Promise<WalletView> {
  const wallet = await prisma().wallet.findUnique({
    where: { userId },
    select: { balanceMinor: true, currency: true },
  });
  if (!wallet) return { balance: 0, currency: env().WALLET_CURRENCY };
  // balance_minor is CHECKed below 2^53, so the conversion from BigInt is exact.
  return { balance: Number(wallet.balanceMinor), currency: wallet.currency };
}
