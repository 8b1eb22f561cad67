import type { Logger } from '../observability/log.js';
import { packageVersion } from '../util/version.js';
import { type TracingConfig, tracingSettings } from './settings.js';
import type { RequestTracer } from './tracer.js';

export type { CallSpan, RequestOutcome, RequestTrace, RequestTracer } from './tracer.js';

/**
 * The gateway's tracer from `tracing:` and the OTEL_* environment, or null when tracing is off
 * (then a request pays one null check, and the OpenTelemetry SDK is never loaded: about a fifth of
 * a second of every start). Built once at start: a reload that changes `tracing:` takes effect at
 * the next restart.
 */
export async function startTracing(
  config: TracingConfig,
  env: NodeJS.ProcessEnv,
  logger: Logger,
): Promise<RequestTracer | null> {
  const settings = tracingSettings(config, env);
  if (settings === null) return null;
  const { createTracer } = await import('./tracer.js');
  const url = new URL(settings.endpoint);
  logger.info(
    { endpoint: `${url.origin}${url.pathname}`, sample_ratio: settings.sampleRatio },
    'tracing on: OTLP/HTTP export',
  );
  return createTracer(settings, packageVersion(), {
    failing: (spans, reason) =>
      logger.warn(
        { component: 'tracing', spans, reason },
        'span export failing; spans are dropped until it works',
      ),
    recovered: () => logger.info({ component: 'tracing' }, 'span export works again'),
  });
}
