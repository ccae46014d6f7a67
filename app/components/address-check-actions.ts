"use server";
/** "Send the link again" of the address-check notice (lib/auth/send-address-check-again.ts). */
import { headers } from "next/headers";
import { sendAddressCheckAgain } from "@/lib/auth/send-address-check-again";
import { requireSessionUser } from "@/lib/auth/session-user";

export type AddressCheckState = { readonly outcome: "requested" | "throttled" } | null;

export async function sendAddressCheckAction(_previous: AddressCheckState): Promise<AddressCheckState> {
  const user = await requireSessionUser();
  const result = await sendAddressCheckAgain(user.email, await headers());
  return { outcome: result.kind };
}
