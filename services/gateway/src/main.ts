import "./tracing";
import { runService } from "@dpp/kit";
import { gatewayService } from "./gateway";

runService(gatewayService);
