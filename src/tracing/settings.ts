/** `tracing:` as the config file gives it (both optional). */
export interface TracingConfig {
  readonly otlpEndpoint: string | null;
  readonly sampleRatio: number | null;
}

/** What the tracer is built from, once, at start. */
export interface TracingSettings {
  /** The full OTLP/HTTP traces URL. */
  readonly endpoint: string;
  /** Ratio of root traces kept; a client's sampled flag decides for its own traces (parent-based). */
  readonly sampleRatio: number;
  readonly serviceName: string;
}

export const DEFAULT_SAMPLE_RATIO = 0.01;

/**
 * CONTRACT §8: tracing is on when `tracing.otlp_endpoint` is set, or the OTEL_* environment names
 * an OTLP endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, `OTEL_EXPORTER_OTLP_ENDPOINT`
 * plus `/v1/traces`). The config wins over the environment, for the endpoint and the ratio alike.
 * Returns null when tracing is off; throws when the environment names a URL that is not one.
 */
export function tracingSettings(config: TracingConfig, env: NodeJS.ProcessEnv): TracingSettings | null {
  const endpoint = config.otlpEndpoint ?? endpointFromEnv(env);
  if (endpoint === null) return null;
  return {
    endpoint,
    sampleRatio: config.sampleRatio ?? ratioFromEnv(env) ?? DEFAULT_SAMPLE_RATIO,
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? 'leadgate',
  };
}

function endpointFromEnv(env: NodeJS.ProcessEnv): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return null;
  const full = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (full !== undefined) return checkedUrl(full, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (base === undefined) return null;
  checkedUrl(base, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** The OpenTelemetry sampler variables, read as a parent-based ratio (the only sampler here). */
function ratioFromEnv(env: NodeJS.ProcessEnv): number | null {
  const sampler = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase();
  if (sampler === 'always_on' || sampler === 'parentbased_always_on') return 1;
  if (sampler === 'always_off' || sampler === 'parentbased_always_off') return 0;
  if (sampler !== undefined && sampler !== 'traceidratio' && sampler !== 'parentbased_traceidratio') {
    return null;
  }
  const arg = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
  if (arg === undefined) return null;
  const ratio = Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got ${JSON.stringify(arg)})`);
  }
  return ratio;
}

function checkedUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${name} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${name} must be an http or https URL`);
  }
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v === undefined || v === '' ? undefined : v;
}
