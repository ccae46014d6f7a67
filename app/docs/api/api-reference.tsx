"use client";
/**
 * The API reference at /docs/api: Swagger UI from the swagger-ui-dist npm package, bundled
 * into the app's own chunks (no CDN, nothing fetched from outside the app at run time), rendering
 * `/api/v1/openapi.json`. Its script is loaded by the app's own bundle, so it runs under the app's
 * Content-Security-Policy without an inline script; the online validator badge is off (it would call a
 * third-party host).
 */
import "swagger-ui-dist/swagger-ui.css";
import { useEffect, useRef } from "react";

export function ApiReference({ documentUrl }: { documentUrl: string }) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let cancelled = false;
    void import("swagger-ui-dist/swagger-ui-es-bundle.js").then(({ default: SwaggerUIBundle }) => {
      if (cancelled || !container.current) return;
      SwaggerUIBundle({
        url: documentUrl,
        domNode: container.current,
        validatorUrl: null,
        deepLinking: false,
        defaultModelsExpandDepth: 0,
        tryItOutEnabled: false,
        // Swagger UI's server choice has no label of its own (axe-core: select-name).
        onComplete: () => container.current?.querySelector("select#servers")?.setAttribute("aria-label", "Server"),
      });
    });
    return () => {
      cancelled = true;
    };
  }, [documentUrl]);
  return <div ref={container} data-testid="api-reference" />;
}
