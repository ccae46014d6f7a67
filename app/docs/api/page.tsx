import type { Metadata } from "next";
import { ApiReference } from "./api-reference";
import "./api-docs.css";

export const metadata: Metadata = { title: "API reference · Exactly-once wallet" };

/** /docs/api: the OpenAPI document of `/api/v1`, rendered. Public, like the document. */
export default function ApiDocsPage() {
  return (
    <main className="api-docs">
      <p>
        Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> (OpenAPI 3.1).
      </p>
      <ApiReference documentUrl="/api/v1/openapi.json" />
    </main>
  );
}
