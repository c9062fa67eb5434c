// Every e2e test and hook starts or drives the whole stack: two minutes each, hooks included
// (jest's project-level testTimeout is ignored; this is the per-file way).
jest.setTimeout(120_000);
