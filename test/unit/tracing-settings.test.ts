/** Tracing's settings and what a span may hold of a URL (clients/telemetry/tracing.ts), without a collector. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env';
import { spanSafeUrl, tracesUrl } from '../../clients/telemetry/tracing';

describe('tracing settings', () => {
  it('is off by default; METALFLOW_OTLP_ENDPOINT wins over OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    expect(loadConfig({}).otlpEndpoint).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).otlpEndpoint).toBe('http://127.0.0.1:4318');
    expect(loadConfig({ METALFLOW_OTLP_ENDPOINT: 'https://otel.example:4318', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).otlpEndpoint).toBe('https://otel.example:4318');
  });

  it('refuses an endpoint that is not an http(s) URL, naming the variable', () => {
    expect(() => loadConfig({ METALFLOW_OTLP_ENDPOINT: '127.0.0.1:4318' })).toThrow(/METALFLOW_OTLP_ENDPOINT must be an http\(s\) URL/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://127.0.0.1:4317' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL.*grpc:/);
  });

  it('sends to /v1/traces of a base endpoint, or to a traces URL as given', () => {
    expect(tracesUrl('http://127.0.0.1:4318')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(tracesUrl('http://collector/otlp/')).toBe('http://collector/otlp/v1/traces');
    expect(tracesUrl('http://collector:4318/v1/traces')).toBe('http://collector:4318/v1/traces');
  });
});

describe('a URL in a span', () => {
  it('keeps no user information and no query value', () => {
    expect(spanSafeUrl('https://user:s3cret@images.example/ubuntu.qcow2?X-Amz-Signature=abc&X-Amz-Credential=key#x')).toBe(
      'https://images.example/ubuntu.qcow2?X-Amz-Signature=REDACTED&X-Amz-Credential=REDACTED',
    );
    expect(spanSafeUrl('http://127.0.0.1:6385/v1/nodes/abc/states/provision')).toBe('http://127.0.0.1:6385/v1/nodes/abc/states/provision');
  });
});
