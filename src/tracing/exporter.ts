import type { ExportResult } from '@opentelemetry/core';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** Told when exports start failing (once per streak) and when they succeed again. */
export interface ExportFailureLog {
  failing(spans: number, reason: string): void;
  recovered(): void;
}

/**
 * The OTLP/HTTP exporter (JSON over HTTP; headers, timeout and compression from the
 * `OTEL_EXPORTER_OTLP_*` environment as the SDK reads them), reporting failures instead of
 * dropping spans silently: one call when exports start failing, one when they work again.
 */
export function createReportingExporter(url: string, log: ExportFailureLog): SpanExporter {
  const inner = new OTLPTraceExporter({ url });
  let failing = false;
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      inner.export(spans, (result) => {
        if (result.code === ExportResultCode.SUCCESS) {
          if (failing) log.recovered();
          failing = false;
        } else if (!failing) {
          failing = true;
          log.failing(spans.length, result.error?.message ?? 'export failed');
        }
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush(),
  };
}
