import { describe, expect, it } from 'vitest';
import { API_ROUTE, LOOKUP_ROUTE, routeTemplate } from '../../src/http/route.js';
import { DEFAULT_SAMPLE_RATIO, tracingSettings } from '../../src/tracing/settings.js';

const none = { otlpEndpoint: null, sampleRatio: null };

describe('tracingSettings', () => {
  it('is off without an endpoint in the config or the environment', () => {
    expect(tracingSettings(none, {})).toBeNull();
    expect(tracingSettings(none, { OTEL_TRACES_SAMPLER_ARG: '1', OTEL_SERVICE_NAME: 'x' })).toBeNull();
  });

  it('takes the config endpoint as the full URL and defaults the ratio to 1 %', () => {
    expect(tracingSettings({ otlpEndpoint: 'http://c:4318/v1/traces', sampleRatio: null }, {})).toEqual({
      endpoint: 'http://c:4318/v1/traces',
      sampleRatio: DEFAULT_SAMPLE_RATIO,
      serviceName: 'leadgate',
    });
    expect(DEFAULT_SAMPLE_RATIO).toBe(0.01);
  });

  it('appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT and takes the traces endpoint as it is', () => {
    expect(tracingSettings(none, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })?.endpoint).toBe(
      'http://c:4318/v1/traces',
    );
    const both = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/x',
    };
    expect(tracingSettings(none, both)?.endpoint).toBe('http://t/x');
  });

  it('lets the config win over the environment, for the endpoint and the ratio', () => {
    const env = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://env/v1/traces',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
    };
    expect(tracingSettings(none, env)).toMatchObject({ endpoint: 'http://env/v1/traces', sampleRatio: 0.5 });
    expect(tracingSettings({ otlpEndpoint: 'http://cfg/v1/traces', sampleRatio: 0.2 }, env)).toMatchObject({
      endpoint: 'http://cfg/v1/traces',
      sampleRatio: 0.2,
    });
  });

  it('reads the OTEL sampler names as parent-based ratios, and ignores samplers it does not offer', () => {
    const at = (env: NodeJS.ProcessEnv) =>
      tracingSettings(none, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', ...env })?.sampleRatio;
    expect(at({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' })).toBe(1);
    expect(at({ OTEL_TRACES_SAMPLER: 'always_off' })).toBe(0);
    expect(at({ OTEL_TRACES_SAMPLER_ARG: '0.25' })).toBe(0.25);
    expect(at({ OTEL_TRACES_SAMPLER: 'jaeger_remote', OTEL_TRACES_SAMPLER_ARG: '0.25' })).toBe(
      DEFAULT_SAMPLE_RATIO,
    );
    expect(() => at({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/from 0 to 1/);
  });

  it('stays off when the environment disables the SDK or the traces exporter', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' };
    expect(tracingSettings(none, { ...on, OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(tracingSettings(none, { ...on, OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
  });

  it('refuses an environment endpoint that is not an http(s) URL, without echoing it', () => {
    expect(() => tracingSettings(none, { OTEL_EXPORTER_OTLP_ENDPOINT: 'user:s3cret@nowhere' })).toThrow(
      /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL$/,
    );
    expect(() => tracingSettings(none, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' })).toThrow(
      /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL$/,
    );
  });
});

describe('routeTemplate', () => {
  it('names the lookup, the API and nothing else, never with the raw path', () => {
    expect(routeTemplate(true, '/api/v2/merchant/leads/L1?customer_id=c')).toBe(LOOKUP_ROUTE);
    expect(LOOKUP_ROUTE).toBe('/api/v2/merchant/leads/{id}');
    expect(routeTemplate(false, '/api/v2/merchant/orders/7')).toBe(API_ROUTE);
    expect(API_ROUTE).toBe('/api/v2/merchant/*');
    expect(routeTemplate(false, '/admin')).toBeUndefined();
    expect(routeTemplate(false, undefined)).toBeUndefined();
  });
});
