/**
 * Requests Node refuses before express sees them (a request line or headers it cannot parse, headers over
 * its 16 KiB ceiling): answered with the error envelope, 400 invalid_request with `details.reason`, where Node
 * lets the server answer (a connection with no answer in progress). Node's own answers are bare status lines.
 */
import http, { type Server } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError, toEnvelope } from "@dpp/contract";
import { newRequestId } from "./middleware/locals";

interface ClientError extends Error {
  code?: string;
}

/** The answer to a request Node refused (exported for its test). */
export function clientErrorResponse(err: ClientError, docsBaseUrl: string): string | undefined {
  if (err.code === "ECONNRESET" || err.code === "ERR_HTTP_REQUEST_TIMEOUT") return undefined;
  const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
  const apiErr = tooLarge
    ? new ApiError(
        "invalid_request",
        `The request's headers are larger than this server accepts (${http.maxHeaderSize} bytes).`,
        { reason: "headers_too_large", max_header_bytes: http.maxHeaderSize },
      )
    : new ApiError("invalid_request", "The request could not be parsed as HTTP/1.1.", {
        reason: "malformed_request",
      });
  const requestId = newRequestId();
  const body = JSON.stringify(toEnvelope(apiErr, requestId, docsBaseUrl));
  return [
    "HTTP/1.1 400 Bad Request",
    "Content-Type: application/json; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Request-Id: ${requestId}`,
    "X-Content-Type-Options: nosniff",
    "Cache-Control: no-store",
    "Connection: close",
    "",
    body,
  ].join("\r\n");
}

export function answerClientErrors(server: Server, docsBaseUrl: string): void {
  server.on("clientError", (err: ClientError, socket: Duplex) => {
    // An answer already in progress on this connection (pipelining): writing would corrupt it.
    const inProgress = (socket as Duplex & { _httpMessage?: unknown })._httpMessage != null;
    const answer = socket.writable && !inProgress ? clientErrorResponse(err, docsBaseUrl) : undefined;
    if (answer === undefined) {
      if (err.code === "ERR_HTTP_REQUEST_TIMEOUT" && socket.writable && !inProgress)
        socket.end("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n");
      else socket.destroy();
      return;
    }
    socket.end(answer);
  });
}
