/**
 * better-auth's HTTP endpoints under `/api/auth/*` (sign-in, sign-up, sign-out, get-session, ...). The
 * instance is created on the first request, not at import, so `next build` opens no database connection.
 */
import { toNextJsHandler } from "better-auth/next-js";
import { auth } from "@/lib/auth/auth";

export const { GET, POST, PATCH, PUT, DELETE } = toNextJsHandler((request: Request) => auth().handler(request));
