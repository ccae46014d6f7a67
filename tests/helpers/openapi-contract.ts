/**
 * Checks real responses against the OpenAPI document the app serves: the status is declared for
 * the operation, the media type is one of the declared ones, the declared headers that are required are there and
 * every declared header that is present matches its schema, and the body validates against the schema (objects are
 * strict, so an undeclared field fails). The http project's setup file (tests/setup/openapi-fetch.ts) runs this on
 * every response to an `/api/v1` path that any test receives through `fetch`, and fails the test that received it.
 *
 * Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1) compiles each response schema once, straight out of the
 * document by JSON pointer, so `$ref`s to `#/components/...` resolve inside the same document.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

interface HeaderSpec {
  required?: boolean;
  schema?: unknown;
}
interface ResponseSpec {
  headers?: Record<string, HeaderSpec | { $ref: string }>;
  content?: Record<string, { schema?: unknown }>;
}
interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, ResponseSpec> }>>;
  components?: { headers?: Record<string, HeaderSpec> };
}

/** One response as received. */
export interface ReceivedResponse {
  method: string;
  /** The request URL's pathname (no query). */
  path: string;
  status: number;
  headers: Headers;
  /** The body text exactly as received. */
  text: string;
}

const pointer = (...segments: string[]) =>
  `#/${segments.map((s) => s.replaceAll("~", "~0").replaceAll("/", "~1")).join("/")}`;

/** A validator of responses against one document. */
export class OpenApiContract {
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly templates: Array<{ template: string; pattern: RegExp; params: number }>;

  constructor(private readonly document: OpenApiDocument) {
    // strict: false: the document holds OpenAPI keywords (`example`, `discriminator`, ...) that are not JSON
    // Schema vocabulary; they carry no validation and are ignored.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(this.ajv);
    this.ajv.addSchema(document as object, "openapi");
    this.templates = Object.keys(document.paths).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
      params: (template.match(/\{/g) ?? []).length,
    }));
  }

  /** The path template of `path` (a literal template wins over one with parameters), or null. */
  templateOf(path: string): string | null {
    const matches = this.templates.filter((t) => t.pattern.test(path)).sort((a, b) => a.params - b.params);
    return matches[0]?.template ?? null;
  }

  private validator(ref: string): ValidateFunction {
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `openapi${ref}` });
      this.validators.set(ref, validate);
    }
    return validate;
  }

  /** The header object and the JSON pointer of its schema (following a `$ref` to `#/components/headers`). */
  private resolveHeader(
    spec: HeaderSpec | { $ref: string },
    inline: string,
  ): { header: HeaderSpec; schemaRef: string } {
    if ("$ref" in spec) {
      const name = spec.$ref.split("/").pop()!.replaceAll("~1", "/").replaceAll("~0", "~");
      return { header: this.document.components?.headers?.[name] ?? {}, schemaRef: `${spec.$ref}/schema` };
    }
    return { header: spec, schemaRef: `${inline}/schema` };
  }

  /** Every way `response` departs from the document (empty when it conforms). */
  check(response: ReceivedResponse): string[] {
    const where = `${response.method} ${response.path} → ${response.status}`;
    const template = this.templateOf(response.path);
    if (template === null) {
      // Contract section 9: an unknown /api/v1 path is a 404 problem; it has no operation to check against.
      return response.status === 404 ? [] : [`${where}: path not in the document`];
    }
    // HEAD is GET without a body (RFC 9110 section 9.3.2): the GET operation's statuses and headers apply.
    const head = response.method.toUpperCase() === "HEAD";
    const method = head ? "get" : response.method.toLowerCase();
    const operation = this.document.paths[template]![method];
    if (!operation) {
      // Contract section 9: a known path with another method is 405 with Allow; OPTIONS answers 204 with Allow.
      const listsAllowed = response.headers.has("allow");
      const answered = (response.status === 405 || (method === "options" && response.status === 204)) && listsAllowed;
      return answered ? [] : [`${where}: ${method.toUpperCase()} ${template} is not in the document`];
    }
    const status = String(response.status);
    const spec = operation.responses[status] ?? operation.responses.default;
    if (!spec) return [`${where}: status ${status} is not declared for ${method.toUpperCase()} ${template}`];
    const base = pointer("paths", template, method, "responses", operation.responses[status] ? status : "default");
    const problems: string[] = [];

    for (const [name, declared] of Object.entries(spec.headers ?? {})) {
      const { header, schemaRef } = this.resolveHeader(declared, `${base}/headers/${pointer(name).slice(2)}`);
      const value = response.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`${where}: required header ${name} is missing`);
        continue;
      }
      if (header.schema !== undefined) {
        const validate = this.validator(schemaRef);
        if (!validate(value))
          problems.push(`${where}: header ${name}: ${value} ${this.ajv.errorsText(validate.errors)}`);
      }
    }

    if (head) {
      if (response.text.length > 0) problems.push(`${where}: a body in the answer to HEAD`);
      return problems;
    }
    const mediaType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const content = spec.content ?? {};
    if (Object.keys(content).length === 0) {
      if (response.text.length > 0) problems.push(`${where}: a body where the document declares none`);
      return problems;
    }
    const declaredType = Object.keys(content).find((type) => type.split(";")[0]!.trim().toLowerCase() === mediaType);
    if (!declaredType) {
      problems.push(`${where}: content type "${mediaType}" is not one of ${Object.keys(content).join(", ")}`);
      return problems;
    }
    if (!mediaType.endsWith("json")) return problems;
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      problems.push(`${where}: the body is not JSON`);
      return problems;
    }
    const validate = this.validator(`${base}/content/${pointer(declaredType).slice(2)}/schema`);
    if (!validate(body)) {
      for (const error of validate.errors ?? []) {
        const extra = error.keyword === "additionalProperties" ? ` (${JSON.stringify(error.params)})` : "";
        problems.push(`${where}: body${error.instancePath} ${error.message}${extra}`);
      }
    }
    return problems;
  }
}
