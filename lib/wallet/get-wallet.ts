import { prisma } from "../db";
import { env } from "../env";

export interface WalletView {
  /** Integer minor units. */
  balance: number;
  currency: string;
}

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
