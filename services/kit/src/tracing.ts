import {
  context,
  propagation,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
} from "@opentelemetry/api";

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

// ---- Trace context across the outbox and the bus --------------------------------
//
// One trace runs gateway → service → outbox → relay → consumer: writeOutbox
// stores the W3C trace context of the writing request in the outbox row; the
// relay publishes each event in a PRODUCER span whose parent is that context
// and puts the span's context into the message headers (traceparent,
// tracestate); the consumer handles each message in a CONSUMER span whose
// parent is the context from the headers. These use only the OpenTelemetry API:
// without a started SDK they do nothing (no context is stored, no span made).

/** The W3C trace context (traceparent, tracestate) of the active span; null when there is none. */
export function activeTraceContext(): Record<string, string> | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : null;
}

/** The context a carrier (outbox row, message headers) names, on top of no active span. */
function contextFrom(carrier: Record<string, string> | null | undefined): Context {
  return carrier ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

const tracer = () => trace.getTracer("@dpp/kit");

/**
 * Whether publishing in PRODUCER spans would be all no-ops: no tracer provider is registered (the API's
 * no-op tracer: no span is recorded) and no propagator (no trace context would be put in a message's
 * headers). What startTracing leaves when tracing is off; the outbox relay may then move events to a bus
 * without making their spans.
 */
export function publishingUntraced(): boolean {
  if (propagation.fields().length > 0) return false;
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider && provider.getDelegateTracer("@dpp/kit") === undefined;
}

/**
 * Starts one PRODUCER span per message, each a child of its own stored trace
 * context, and returns the headers carrying each span's context; `end` closes
 * them (with the error, when publishing failed).
 */
export function startPublishSpans(
  topic: string,
  parents: Array<Record<string, string> | null | undefined>,
  attributes: (i: number) => Attributes = () => ({}),
): { headers: Array<Record<string, string> | undefined>; end(err?: unknown): void } {
  const spans = parents.map((p, i) =>
    tracer().startSpan(
      `publish ${topic}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          "messaging.operation.type": "send",
          "messaging.destination.name": topic,
          ...attributes(i),
        },
      },
      contextFrom(p),
    ),
  );
  const headers = spans.map((span) => {
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
    return carrier.traceparent ? carrier : undefined;
  });
  return {
    headers,
    end: (err?: unknown) => {
      for (const span of spans) {
        if (err !== undefined) {
          span.recordException(err instanceof Error ? err : String(err));
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
        }
        span.end();
      }
    },
  };
}

/** A CONSUMER span of one message, opened before its batch is handled and ended after. */
export interface ConsumeSpan {
  /** Runs `fn` with this span active: its work (queries) joins the message's trace. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Ends the span, with the error when handling the message failed. */
  end(err?: unknown): void;
}

/**
 * Opens a CONSUMER span whose parent is the trace context in the message
 * headers, for a consumer that handles a batch of messages together: each
 * message keeps a span of its own in its producer's trace.
 */
export function startConsumeSpan(
  topic: string,
  headers: Record<string, string> | undefined,
  attributes: Attributes,
): ConsumeSpan {
  const span = tracer().startSpan(
    `process ${topic}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.operation.type": "process",
        "messaging.destination.name": topic,
        ...attributes,
      },
    },
    contextFrom(headers),
  );
  return {
    run: (fn) => context.with(trace.setSpan(context.active(), span), fn),
    end: (err?: unknown) => {
      if (err !== undefined) {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      }
      span.end();
    },
  };
}

/**
 * Runs `fn` in a CONSUMER span whose parent is the trace context in the
 * message headers: the consumer's work (its queries) joins the producer's trace.
 */
export async function withConsumeSpan<T>(
  topic: string,
  headers: Record<string, string> | undefined,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  const span = startConsumeSpan(topic, headers, attributes);
  try {
    const result = await span.run(fn);
    span.end();
    return result;
  } catch (err) {
    span.end(err);
    throw err;
  }
}
