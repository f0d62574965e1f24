/** A JSON answer of the internal API as tests read it. */
export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
  json: any;
  text: string;
  /** The response's content type. */
  type: string;
  headers: Headers;
}

/**
 * Calls the internal API at `base` with `Authorization: Bearer <token>` (none when the token is
 * null); an object body is sent as JSON, a string as it is.
 */
export function apiCaller(base: string, defaultToken: string) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    token: string | null = defaultToken,
  ): Promise<ApiAnswer> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: the text is the answer
    }
    return {
      status: res.status,
      json,
      text,
      type: res.headers.get('content-type') ?? '',
      headers: res.headers,
    };
  };
}
