import type { DescMessage, DescMethod } from "@bufbuild/protobuf";
import type { Code, ConnectError, ContextValues, Transport } from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  createMethodSerializationLookup,
  encodeEnvelope,
  envelopeCompress,
  envelopeDecompress,
  type MethodSerializationLookup,
  readAllBytes,
  type UniversalClientFn,
  type UniversalHandler,
  type UniversalServerRequest,
} from "@connectrpc/connect/protocol";
import {
  codeFromString,
  codeToHttpStatus,
  contentTypeRegExp as connectContentTypeRegExp,
  contentTypeStreamJson as connectContentTypeStreamJson,
  contentTypeUnaryJson as connectContentTypeUnaryJson,
  createTransport,
  endStreamFlag,
  endStreamToJson,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import {
  contentTypeJson as grpcContentTypeJson,
  contentTypeProto as grpcContentTypeProto,
  contentTypeRegExp as grpcContentTypeRegExp,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import {
  contentTypeJson as grpcWebContentTypeJson,
  contentTypeProto as grpcWebContentTypeProto,
  contentTypeRegExp as grpcWebContentTypeRegExp,
} from "@connectrpc/connect/protocol-grpc-web";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";

// The ONE file that imports connect-es's protocol modules (`@connectrpc/connect/protocol`,
// `/protocol-connect`, `/protocol-grpc`). They are marked "@private Internal code, does not
// follow semantic versioning": an upgrade of connect-es may change any of them, and this is
// the file to fix when it does (test/docs/connect-internals.test.ts keeps it the only one).
// What we take from them is what makes the lean paths answer exactly as the router does: its
// envelopes, its compression negotiation, its serializers and its error encodings.

export type { MethodSerializationLookup, UniversalHandler };

/** What connect-node's router accepts: its default compressions, in its order. */
export const routerCompressions: Compression[] = [compressionGzip, compressionBrotli];

/**
 * The content types the router reads its bodies in (connect-fastify registers a parser that
 * reads nothing for each, so that the router reads the body itself): the names, then the
 * patterns of each protocol.
 */
export const routerContentTypes: { names: string[]; patterns: RegExp[] } = {
  names: [
    connectContentTypeUnaryJson,
    connectContentTypeStreamJson,
    grpcWebContentTypeProto,
    grpcWebContentTypeJson,
    grpcContentTypeProto,
    grpcContentTypeJson,
  ],
  patterns: [grpcContentTypeRegExp, grpcWebContentTypeRegExp, connectContentTypeRegExp],
};

/** connect's default: smaller answers go out uncompressed. */
export const compressMinBytes = 1024;

/** As the router is configured: a JSON field the API does not know is INVALID_ARGUMENT. */
const jsonOptions = { ignoreUnknownFields: false };

/**
 * The router's own serializers of a method (binary and JSON), with its read limit: a message
 * over `readMaxBytes` is refused in the router's words.
 */
export function methodSerializers(
  method: DescMethod,
  readMaxBytes: number,
): MethodSerializationLookup<DescMessage, DescMessage> {
  return createMethodSerializationLookup(method, undefined, jsonOptions, {
    readMaxBytes,
    writeMaxBytes: 0xffffffff,
  });
}

/**
 * The compression of a request and of its answer, negotiated as the router does from the
 * request's encoding and accepted encodings (`grpc-encoding` / `grpc-accept-encoding`, or
 * `content-encoding` / `accept-encoding`); `error` for an encoding the router does not know.
 */
export function negotiateCompression(
  encoding: string | undefined,
  acceptEncoding: string | undefined,
  acceptHeaderName: string,
): { request: Compression | null; response: Compression | null; error?: ConnectError } {
  return compressionNegotiate(
    routerCompressions,
    encoding ?? null,
    acceptEncoding ?? null,
    acceptHeaderName,
  );
}

/** gRPC's length-prefixed message: flags, a 4-byte length, the bytes. */
/** Compress an envelope's message when it is at least `compressMinBytes` long. */
/** Decompress an envelope's message, refusing one that inflates past `readMaxBytes`. */
/** Read a whole body, refusing one over `readMaxBytes` (a declared length is trusted first). */
export { encodeEnvelope, envelopeCompress, envelopeDecompress, readAllBytes };

/** The HTTP status of a Connect error code, as the Connect protocol sends it. */
export function connectHttpStatus(code: Code): number {
  return codeToHttpStatus(code);
}

/** The Connect protocol's error JSON of an error (`{code, message, details}`), as bytes. */
export function connectErrorJson(err: ConnectError): Uint8Array {
  return errorToJsonBytes(err, undefined);
}

/** The code of a Connect error JSON's `code` string (`invalid_argument`); undefined if unknown. */
export function connectCodeOf(name: string): Code | undefined {
  return codeFromString(name);
}

/** A Connect streaming protocol's end-of-stream frame carrying an error. */
export function connectEndStreamFrame(err: ConnectError): Uint8Array {
  const json = new TextEncoder().encode(
    JSON.stringify(endStreamToJson(new Headers(), err, undefined)),
  );
  const frame = new Uint8Array(5 + json.length);
  frame[0] = endStreamFlag;
  new DataView(frame.buffer).setUint32(1, json.length);
  frame.set(json, 5);
  return frame;
}

/**
 * The gRPC status fields of an error, as the router writes them: `grpc-status`,
 * `grpc-message` (encoded as connect-es encodes it) and, with details,
 * `grpc-status-details-bin`.
 */
export function grpcStatusFields(err: ConnectError): Headers {
  return setTrailerStatus(new Headers(), err);
}

/**
 * A Connect transport to one handler of the router (`router.handlers`), in process: a call
 * runs through the router's interceptors with `values` as its context values (the request's
 * CallInfo, the principal admission found), as if it had come over the wire. The REST export
 * of a server stream calls it (src/events/export-route.ts).
 */
export function inProcessTransport(handler: UniversalHandler, values: ContextValues): Transport {
  const empty = async function* (): AsyncIterable<Uint8Array> {};
  const httpClient: UniversalClientFn = async (req) => {
    const res = await handler({
      httpVersion: "1.1",
      method: req.method,
      url: req.url,
      header: req.header,
      body: req.body ?? empty(),
      signal: req.signal ?? new AbortController().signal,
      contextValues: values,
    } satisfies UniversalServerRequest);
    return {
      status: res.status,
      header: new Headers(res.header),
      body: res.body ?? empty(),
      trailer: new Headers(res.trailer),
    };
  };
  return createTransport({
    httpClient,
    baseUrl: "http://in-process",
    useBinaryFormat: true,
    interceptors: [],
    acceptCompression: [],
    sendCompression: null,
    compressMinBytes: Number.MAX_SAFE_INTEGER,
    readMaxBytes: Number.MAX_SAFE_INTEGER,
    writeMaxBytes: Number.MAX_SAFE_INTEGER,
  });
}
