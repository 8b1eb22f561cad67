import { z } from 'zod';
import type { TracingConfig } from './settings.js';

/** `tracing:` — OpenTelemetry spans over OTLP/HTTP; off unless an endpoint is given here or in OTEL_*. */
export const tracingSchema = z
  .strictObject({
    otlp_endpoint: z.url({ protocol: /^https?$/ }).optional(),
    sample_ratio: z.number().min(0).max(1).optional(),
  })
  .default({});

/** What each `tracing:` field means, for `leadgate docs` and docs/reference/config.md. */
export const tracingMeanings: Readonly<Record<string, string>> = {
  'tracing.otlp_endpoint':
    'OTLP/HTTP traces URL (`http://collector:4318/v1/traces`); tracing is off unless this or `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set; the config wins',
  'tracing.sample_ratio':
    "share of new traces kept (default 0.01, else `OTEL_TRACES_SAMPLER_ARG`); a client's sampled `traceparent` is always followed",
};

/** `tracing:` as validated → as the config keeps it (the environment is read at start). */
export function tracingConfigOf(raw: z.infer<typeof tracingSchema>): TracingConfig {
  return { otlpEndpoint: raw.otlp_endpoint ?? null, sampleRatio: raw.sample_ratio ?? null };
}
