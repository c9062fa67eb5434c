import type { ModuleDeps } from "./deps";

/**
 * A dependency that is not there: reading it is allowed (a module factory keeps its dependencies), calling any
 * of its methods throws, naming it (`close` is a no-op, so that code that closes its clients can run).
 */
function absent(name: string): object {
  return new Proxy(
    {},
    {
      get: (_target, prop) => {
        if (prop === "then" || typeof prop === "symbol") return undefined;
        if (prop === "close") return () => undefined;
        return () => {
          throw new Error(`${name}.${String(prop)} was called, but ${name} is not connected here`);
        };
      },
    },
  );
}

/**
 * The modules' dependencies for tests and for describing the route table: those given in `overrides` (fakes,
 * or a real store), every other one absent. A test names only what it uses, so a service added to the registry
 * needs no edit of the gateway's tests.
 */
export function fakeModuleDeps(overrides: Partial<Record<keyof ModuleDeps, unknown>> = {}): ModuleDeps {
  return new Proxy({} as ModuleDeps, {
    get: (_target, name) =>
      typeof name === "string" && name in overrides
        ? overrides[name as keyof ModuleDeps]
        : absent(String(name)),
  });
}
