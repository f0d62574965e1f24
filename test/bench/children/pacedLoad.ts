/**
 * The enqueue bench's paced client in a process of its own (../lib/pacedLoad.ts): argument one is
 * a JSON {@link PacedLoadJob}; prints the latencies as one JSON line.
 */
import { type PacedLoadJob, pacedLoad } from '../lib/pacedLoad.js';

const job = JSON.parse(process.argv[2] ?? '{}') as PacedLoadJob;
process.stdout.write(`${JSON.stringify(await pacedLoad(job))}\n`);
