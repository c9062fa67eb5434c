/**
 * OpenTelemetry tracing for every hop: HTTP and express in the gateway, gRPC
 * client and server spans (context travels in metadata), pg, ioredis, kafkajs
 * (producer and consumer spans; context travels in message headers) and pino
 * log correlation. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (OTLP/HTTP
 * protobuf exporter) or OTEL_TRACES_EXPORTER=console. Must run before the
 * instrumented modules are loaded: each service's src/tracing.ts calls it and
 * is the first import of its main.ts.
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  const toConsole = env.OTEL_TRACES_EXPORTER === "console";
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !toConsole) return false;
  // Loaded lazily so that a process without tracing does not pay for the SDK.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require("@opentelemetry/sdk-node") as typeof import("@opentelemetry/sdk-node");
  const { ConsoleSpanExporter } =
    require("@opentelemetry/sdk-trace-base") as typeof import("@opentelemetry/sdk-trace-base");
  const { OTLPTraceExporter } =
    require("@opentelemetry/exporter-trace-otlp-proto") as typeof import("@opentelemetry/exporter-trace-otlp-proto");
  const { HttpInstrumentation } =
    require("@opentelemetry/instrumentation-http") as typeof import("@opentelemetry/instrumentation-http");
  const { ExpressInstrumentation } =
    require("@opentelemetry/instrumentation-express") as typeof import("@opentelemetry/instrumentation-express");
  const { GrpcInstrumentation } =
    require("@opentelemetry/instrumentation-grpc") as typeof import("@opentelemetry/instrumentation-grpc");
  const { PgInstrumentation } =
    require("@opentelemetry/instrumentation-pg") as typeof import("@opentelemetry/instrumentation-pg");
  const { IORedisInstrumentation } =
    require("@opentelemetry/instrumentation-ioredis") as typeof import("@opentelemetry/instrumentation-ioredis");
  const { KafkaJsInstrumentation } =
    require("@opentelemetry/instrumentation-kafkajs") as typeof import("@opentelemetry/instrumentation-kafkajs");
  const { PinoInstrumentation } =
    require("@opentelemetry/instrumentation-pino") as typeof import("@opentelemetry/instrumentation-pino");
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? serviceName,
    traceExporter: toConsole ? new ConsoleSpanExporter() : new OTLPTraceExporter(),
    instrumentations: [
      new HttpInstrumentation(),
      new ExpressInstrumentation(),
      new GrpcInstrumentation(),
      new PgInstrumentation(),
      new IORedisInstrumentation(),
      new KafkaJsInstrumentation(),
      new PinoInstrumentation({ disableLogSending: true }),
    ],
  });
  sdk.start();
  const stop = () => void sdk.shutdown().catch(() => undefined);
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  return true;
}
