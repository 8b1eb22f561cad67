import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One span as an OTLP/HTTP JSON export carries it, flattened. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP SpanKind: 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly service: string | number | boolean | undefined;
}

export interface OtlpReceiver {
  /** The full traces URL (`…/v1/traces`). */
  readonly url: string;
  readonly base: string;
  readonly spans: ReceivedSpan[];
  /** Paths the exports were posted to. */
  readonly paths: string[];
  /** Resolves with the spans of `traceId` once `count` of them arrived; rejects after `ms`. */
  trace(traceId: string, count: number, ms?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  status?: { code?: number };
}
interface Export {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

const scalarOf = (v: AnyValue) =>
  v.stringValue ?? v.boolValue ?? v.doubleValue ?? (v.intValue === undefined ? '' : Number(v.intValue));
const attributesOf = (list: KeyValue[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, scalarOf(a.value)]));

/** A real OTLP/HTTP receiver on 127.0.0.1 that decodes the JSON exports it gets. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const paths: string[] = [];
  let arrived: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(req.url ?? '');
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const decoded = JSON.parse(body.toString('utf8')) as Export;
      for (const rs of decoded.resourceSpans ?? []) {
        const service = attributesOf(rs.resource?.attributes)['service.name'];
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
              statusCode: s.status?.code ?? 0,
              service,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      const waiting = arrived;
      arrived = [];
      for (const w of waiting) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/v1/traces`,
    base,
    spans,
    paths,
    trace(traceId, count, ms = 5_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`trace ${traceId}: ${count} spans expected within ${ms} ms`)),
          ms,
        );
        const check = () => {
          const found = spans.filter((s) => s.traceId === traceId);
          if (found.length >= count) {
            clearTimeout(timer);
            resolve(found);
          } else arrived.push(check);
        };
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
