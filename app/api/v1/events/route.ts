import { apiRoute } from "@/lib/http/api-route";
import { withPrincipal } from "@/lib/http/route";
import { eventStreamResponse } from "@/lib/live/event-stream";

export const dynamic = "force-dynamic";

/** GET /api/v1/events: the signed-in user's live status as Server-Sent Events (lib/live/event-stream.ts). */
const handleGet = withPrincipal(async (request, principal) => eventStreamResponse(principal, request));

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
