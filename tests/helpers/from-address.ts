/**
 * HTTP requests from a chosen loopback source address (127.0.0.1, 127.0.0.2, ...): the app then sees that
 * address as the socket's peer, which is how tests show that a client cannot pick its own address (C22).
 * Linux routes all of 127.0.0.0/8 to the loopback interface, so any of them can be bound without setup.
 */
import { request as httpRequest } from "node:http";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON, or undefined. */
  json: any;
}

/**
 * Sends one request from `localAddress` and reads the whole answer (redirects are not followed).
 *
 * @param url absolute URL of the app.
 * @param options.body a string or bytes, sent as is.
 */
export function requestFrom(
  localAddress: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? (options.body === undefined ? "GET" : "POST"),
        headers: options.headers,
        localAddress,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** POSTs JSON from `localAddress`. */
export function postJsonFrom(
  localAddress: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return requestFrom(localAddress, url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** The text of an HTML attribute value (the entities React writes). */
function unescapeHtml(value: string): string {
  return value
    .replaceAll("&quot;", '"')
    .replaceAll("&#x27;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}

/**
 * Submits a page's server-action form the way a browser without JavaScript does (multipart/form-data with the
 * hidden `$ACTION_...` fields React renders: `$ACTION_ID_<id>` for a plain action, `$ACTION_REF_n`, `$ACTION_n:k`
 * and `$ACTION_KEY` for a form of `useActionState`), from `localAddress`, with the page's own Origin.
 *
 * @param pageUrl the page that holds the form (its first action form is used, or the first that contains
 *   `options.containing`).
 * @param fields the form's fields.
 * @param headers sent with the POST; a `cookie` among them is sent with the page's GET too (a signed-in page).
 * @param options.containing text the wanted form's HTML contains, e.g. `name="refundId"`: picks one form of several
 *   (a signed-in page's first action form is the header's sign-out).
 * @returns the response; a redirect's target is in `headers.location`; a `useActionState` form that answers
 *   without redirecting gives 200 and the page rendered with the answer.
 */
export async function submitPageFormFrom(
  localAddress: string,
  pageUrl: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
  options: { containing?: string } = {},
): Promise<RawResponse> {
  const page = await requestFrom(localAddress, pageUrl, headers.cookie ? { headers: { cookie: headers.cookie } } : {});
  const form = [...page.text.matchAll(/<form[^>]*>([\s\S]*?)<\/form>/g)]
    .map((match) => match[1]!)
    .find((html) => html.includes('name="$ACTION_') && html.includes(options.containing ?? ""));
  const actionFields: Record<string, string> = {};
  for (const match of (form ?? "").matchAll(/<input type="hidden" name="(\$ACTION_[^"]+)"(?: value="([^"]*)")?\/?>/g)) {
    actionFields[unescapeHtml(match[1]!)] = unescapeHtml(match[2] ?? "");
  }
  if (Object.keys(actionFields).length === 0) throw new Error(`no server-action form on ${pageUrl}`);
  const boundary = `----wallet-test-${Date.now().toString(16)}`;
  const parts = Object.entries({ ...actionFields, ...fields }).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  );
  return requestFrom(localAddress, pageUrl, {
    method: "POST",
    headers: {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      origin: new URL(pageUrl).origin,
      ...headers,
    },
    body: `${parts.join("")}--${boundary}--\r\n`,
  });
}
