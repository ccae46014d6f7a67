import { redirect } from "next/navigation";
import { getSessionUser } from "@/lib/auth/session-user";

export const dynamic = "force-dynamic";

export default async function Home() {
  redirect((await getSessionUser()) ? "/wallet" : "/sign-in");
}
