import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";

/**
 * ServiceRegistration is a service descriptor and its one implementation, as every protocol
 * serves it: the Connect router (gRPC, gRPC-Web, Connect) and the REST gateway share the same
 * impl object. Methods missing from `impl` answer UNIMPLEMENTED.
 */
export interface ServiceRegistration {
  readonly service: DescService;
  readonly impl: Partial<ServiceImpl<DescService>>;
  /**
   * How the REST gateway treats input it does not know: `strict` (the default) refuses an
   * unknown query parameter or JSON body field with INVALID_ARGUMENT; `lenient` ignores
   * them, as v1's gateway did (a v1 script's extra keys keep working).
   */
  readonly restInput?: "strict" | "lenient";
}

/** How a registration is served beyond its implementation. */
export interface RegistrationOptions {
  readonly restInput?: "strict" | "lenient";
}

/** Pair a service with its implementation; the compiler checks the impl against the service. */
export function registration<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
  options: RegistrationOptions = {},
): ServiceRegistration {
  return { service, impl: impl as Partial<ServiceImpl<DescService>>, ...options };
}
