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
}

/** Pair a service with its implementation; the compiler checks the impl against the service. */
export function registration<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
): ServiceRegistration {
  return { service, impl: impl as Partial<ServiceImpl<DescService>> };
}
