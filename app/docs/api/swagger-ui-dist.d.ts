/** The one entry of swagger-ui-dist that /docs/api loads; the package ships no types. */
declare module "swagger-ui-dist/swagger-ui-es-bundle.js" {
  interface SwaggerUIOptions {
    url: string;
    domNode: HTMLElement;
    validatorUrl: string | null;
    deepLinking?: boolean;
    defaultModelsExpandDepth?: number;
    tryItOutEnabled?: boolean;
    /** Called once the document is rendered. */
    onComplete?: () => void;
  }
  const SwaggerUIBundle: (options: SwaggerUIOptions) => unknown;
  export default SwaggerUIBundle;
}
