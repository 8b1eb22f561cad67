import type { IncomingHttpHeaders } from 'node:http';
import {
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { createReportingExporter, type ExportFailureLog } from './exporter.js';
import type { TracingSettings } from './settings.js';

/** A call the gateway makes under a request: the upstream, the lead resolver. */
export interface CallSpan {
  /** `traceparent` (and `tracestate`) naming this span, for the called server. */
  readonly headers: Readonly<Record<string, string>>;
  /** Ends the span: with the HTTP status the call got, or without one when it failed. */
  end(status?: number): void;
}

/** What a request's server span says when it ends. */
export interface RequestOutcome {
  readonly status: number;
  /** A template (`/api/v2/merchant/leads/{id}`), never the raw path; undefined off the API. */
  readonly route: string | undefined;
  readonly code: string;
  readonly keyName: string | undefined;
}

/** One sampled request: its server span and the calls made under it. */
export interface RequestTrace {
  call(name: string, method: string, target: URL): CallSpan;
  end(outcome: RequestOutcome): void;
}

/** The tracing interface the HTTP layer sees; null stands for "tracing off". */
export interface RequestTracer {
  /** The request's trace, or null when it is not sampled (its trace context then passes as sent). */
  begin(method: string, headers: IncomingHttpHeaders): RequestTrace | null;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

const SERVER = { kind: SpanKind.SERVER };

/** Spans leave in batches, at the latest a second after they end (the contract allows 5 s). */
const EXPORT_DELAY_MS = 1_000;

/**
 * Spans built by hand on the OpenTelemetry SDK (no module patching): one SERVER span per sampled
 * request, its parent taken from the client's `traceparent`, sampled parent-based with
 * `sampleRatio` for new traces; CLIENT spans for the calls under it; OTLP/HTTP export in batches.
 */
export function createTracer(
  settings: TracingSettings,
  version: string,
  failures: ExportFailureLog,
): RequestTracer {
  const exporter = createReportingExporter(settings.endpoint, failures);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  const tracer = provider.getTracer('leadgate', version);
  const propagator = new W3CTraceContextPropagator();

  return {
    begin(method, headers) {
      const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
      const span = tracer.startSpan(method, SERVER, parent);
      if (!span.isRecording()) return null;
      span.setAttribute('http.request.method', method);
      return new SampledRequest(tracer, propagator, span, method);
    },
    async shutdown() {
      await provider.shutdown();
    },
  };
}

class SampledRequest implements RequestTrace {
  private readonly open: CallSpan[] = [];
  private readonly context: Context;

  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: W3CTraceContextPropagator,
    private readonly span: Span,
    private readonly method: string,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, span);
  }

  call(name: string, method: string, target: URL): CallSpan {
    const span = this.tracer.startSpan(
      name,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          'server.address': target.hostname,
          'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
        },
      },
      this.context,
    );
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
    let ended = false;
    const call: CallSpan = {
      headers,
      end(status) {
        if (ended) return;
        ended = true;
        if (status === undefined) span.setStatus({ code: SpanStatusCode.ERROR });
        else {
          span.setAttribute('http.response.status_code', status);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
    this.open.push(call);
    return call;
  }

  end(outcome: RequestOutcome): void {
    for (const call of this.open) call.end();
    const span = this.span;
    span.setAttribute('http.response.status_code', outcome.status);
    span.setAttribute('leadgate.code', outcome.code);
    if (outcome.keyName !== undefined) span.setAttribute('leadgate.key', outcome.keyName);
    if (outcome.route !== undefined) {
      span.setAttribute('http.route', outcome.route);
      span.updateName(`${this.method} ${outcome.route}`);
    }
    if (outcome.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}
