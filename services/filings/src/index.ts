export { filingsService } from "./service";
export { filingsEnv } from "./config";
export { startPortalSimulator, BEHAVIOURS, type Behaviour, type PortalSimulator } from "./portal/simulator";
export { ATTESTATION_WORDING_VERSION } from "./domain/affichage";
