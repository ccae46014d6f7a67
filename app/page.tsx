import { redirect } from "next/navigation";
import { homePath } from "@/lib/auth/home-path";
import { getSessionUser, signInPath } from "@/lib/auth/session-user";

export const dynamic = "force-dynamic";

/** The bare address: the signed-in person's first page (lib/auth/home-path.ts), or sign-in. */
export default async function Home() {
  const user = await getSessionUser();
  redirect(user ? homePath(user.role) : await signInPath());
}
