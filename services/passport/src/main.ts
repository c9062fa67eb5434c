import "./tracing";
import { runService } from "@dpp/kit";
import { passportService } from "./service";

runService(passportService());
