import { UserError } from '../common/errors.js';

const HELP = `usage: vcu-sync simulator [flags]
  --port N  --host H  --seed N  --projects N  --issuances N  --units N  --max-page-size N
  --auth apikey|bearer|either  --api-key KEY  --units-unpaginated  --projects-unpaginated
  --webhook-url URL  --webhook-secret whsec_...  --policy approve|reject|none|alternate
  --notify-status 200|202  --error-rate R  --fault-429-rate R  --latency-ms N
Admin endpoints under /_sim/ steer records and faults (see docs/operator.md).`;

/** `vcu-sync simulator [...]`: runs the operator simulator until SIGINT/SIGTERM. */
export async function runSimulatorCommand(flags: string[]): Promise<number> {
  if (flags.includes('--help') || flags.includes('-h')) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const { parseSimulatorArgs, runSimulatorCli } = await import('../simulator/index.js');
  try {
    parseSimulatorArgs(flags);
  } catch (err) {
    throw new UserError(`simulator: ${(err as Error).message}`, 64);
  }
  const sim = await runSimulatorCli(flags);
  // The simulator's own signal handlers close it and exit; wait here until then.
  await new Promise<void>(() => undefined);
  await sim.close();
  return 0;
}
