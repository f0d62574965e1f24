import os from 'node:os';

/** What the figures were measured on. */
export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
}

export function describeMachine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  };
}
