import { create, type DescFile, type DescService, toBinary } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { registration, type ServiceRegistration } from "../service-registration.js";

/** What reflection describes. */
export interface ReflectionOptions {
  /**
   * Services to list. By default, every service registered on the router, read at the
   * first reflection call (so reflection may be registered before or after them).
   */
  services?: readonly DescService[];
  /** More files to describe, e.g. google/rpc/error_details.proto for error details. */
  files?: readonly DescFile[];
}

/**
 * Register gRPC server reflection, `grpc.reflection.v1.ServerReflection` and its
 * `v1alpha` twin, describing the services with their files and every file those import.
 * Both reflection services list themselves.
 */
export function registerReflection(router: ConnectRouter, opts: ReflectionOptions = {}): void {
  for (const { service, impl } of reflectionServices({
    ...opts,
    services: opts.services ?? (() => router.handlers.map((h) => h.service)),
  })) {
    router.service(service, impl);
  }
}

/** The reflection services (v1 and v1alpha) of `opts.services`, for any server to serve. */
export function reflectionServices(
  opts: Omit<ReflectionOptions, "services"> & {
    /** The services, or where to read them at the first reflection call. */
    services: readonly DescService[] | (() => readonly DescService[]);
  },
): ServiceRegistration[] {
  let index: ReflectionIndex | undefined;
  const getIndex = () => {
    const services = typeof opts.services === "function" ? opts.services() : opts.services;
    index ??= indexFiles(services, opts.files ?? []);
    return index;
  };
  const v1Impl = registration(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const req of requests) {
        const messageResponse = answer(getIndex(), req.messageRequest, sent);
        yield create(v1.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req,
          messageResponse,
        });
      }
    },
  });
  const v1alphaImpl = registration(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const req of requests) {
        const messageResponse = answer(getIndex(), req.messageRequest, sent);
        yield create(v1alpha.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req,
          messageResponse,
        });
      }
    },
  });
  return [v1Impl, v1alphaImpl];
}

interface ReflectionIndex {
  services: string[];
  files: Map<string, DescFile>;
  /** Fully-qualified name of every declaration -> the file declaring it. */
  symbols: Map<string, DescFile>;
  /** Extendee type name -> extension number -> the file declaring the extension. */
  extensions: Map<string, Map<number, DescFile>>;
}

type Request =
  | v1.ServerReflectionRequest["messageRequest"]
  | v1alpha.ServerReflectionRequest["messageRequest"];

type Answer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | {
      case: "allExtensionNumbersResponse";
      value: { baseTypeName: string; extensionNumber: number[] };
    }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

const serialized = new WeakMap<DescFile, Uint8Array>();

function indexFiles(services: readonly DescService[], extra: readonly DescFile[]): ReflectionIndex {
  const all = [...services, v1.ServerReflection, v1alpha.ServerReflection];
  const index: ReflectionIndex = {
    services: [...new Set(all.map((s) => s.typeName))].sort(),
    files: new Map(),
    symbols: new Map(),
    extensions: new Map(),
  };
  const add = (file: DescFile) => {
    if (index.files.has(file.proto.name)) return;
    index.files.set(file.proto.name, file);
    for (const dep of file.dependencies) add(dep);
    for (const t of nestedTypes(file)) {
      index.symbols.set(t.typeName, file);
      // Members are symbols too; enum values are scoped beside their enum, as in protoc.
      if (t.kind === "message") {
        // proto.nestedType includes map entries, which DescMessage leaves out.
        const members = [...t.fields, ...t.oneofs, ...t.proto.nestedType];
        for (const m of members) index.symbols.set(`${t.typeName}.${m.name}`, file);
      } else if (t.kind === "service") {
        for (const m of t.methods) index.symbols.set(`${t.typeName}.${m.name}`, file);
      } else if (t.kind === "enum") {
        const scope = t.typeName.slice(0, t.typeName.lastIndexOf(".") + 1);
        for (const v of t.values) index.symbols.set(scope + v.name, file);
      } else {
        const byNumber = index.extensions.get(t.extendee.typeName) ?? new Map<number, DescFile>();
        index.extensions.set(t.extendee.typeName, byNumber.set(t.number, file));
      }
    }
  };
  for (const s of all) add(s.file);
  for (const f of extra) add(f);
  return index;
}

function answer(index: ReflectionIndex, req: Request, sent: Set<string>): Answer {
  switch (req.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: { service: index.services.map((name) => ({ name })) },
      };
    case "fileByFilename":
      return withDependencies(index.files.get(req.value), sent, `file "${req.value}"`);
    case "fileContainingSymbol": {
      const symbol = req.value.replace(/^\./, "");
      return withDependencies(index.symbols.get(symbol), sent, `symbol "${symbol}"`);
    }
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = req.value;
      const file = index.extensions.get(containingType)?.get(extensionNumber);
      return withDependencies(file, sent, `extension ${extensionNumber} of "${containingType}"`);
    }
    case "allExtensionNumbersOfType": {
      const type = req.value.replace(/^\./, "");
      if (!index.symbols.has(type)) return notFound(`type "${type}"`);
      const numbers = [...(index.extensions.get(type)?.keys() ?? [])].sort((a, b) => a - b);
      return {
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: type, extensionNumber: numbers },
      };
    }
    default:
      return {
        case: "errorResponse",
        value: { errorCode: Code.InvalidArgument, errorMessage: "empty reflection request" },
      };
  }
}

/**
 * The file first, then its transitive imports. As in grpc-go, imports already sent on
 * this stream are left out; the requested file itself is always sent.
 */
function withDependencies(file: DescFile | undefined, sent: Set<string>, what: string): Answer {
  if (!file) return notFound(what);
  const out: Uint8Array[] = [];
  const seen = new Set<string>();
  const queue = [file];
  for (let f = queue.shift(); f; f = queue.shift()) {
    const name = f.proto.name;
    if (seen.has(name)) continue;
    seen.add(name);
    if (f === file || !sent.has(name)) out.push(serialize(f));
    sent.add(name);
    queue.push(...f.dependencies);
  }
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
}

function serialize(file: DescFile): Uint8Array {
  let bytes = serialized.get(file);
  if (!bytes) {
    bytes = toBinary(FileDescriptorProtoSchema, file.proto);
    serialized.set(file, bytes);
  }
  return bytes;
}

function notFound(what: string): Answer {
  return {
    case: "errorResponse",
    value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
  };
}
