/**
 * Request and response bodies of `/api/v1`, from the types openapi-typescript generates out of the OpenAPI document
 * (scripts/openapi-types.ts writes generated/openapi-types.ts). The project's own clients (the storm, the browser
 * tests' helpers) use these, so an API change that breaks them breaks `tsc`.
 */
import type { paths } from "../../generated/openapi-types";

type Operation<P extends keyof paths, M extends keyof paths[P]> = paths[P][M];

/** The JSON request body of `M P`. */
export type RequestBody<P extends keyof paths, M extends keyof paths[P]> =
  Operation<P, M> extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;

/** The body of the `S` response of `M P` (its JSON or problem+json content). */
export type ResponseBody<P extends keyof paths, M extends keyof paths[P], S extends number> =
  Operation<P, M> extends { responses: infer R }
    ? S extends keyof R
      ? R[S] extends { content: infer C }
        ? C[keyof C]
        : never
      : never
    : never;
