import { z } from 'zod';

/** The value shapes the configuration schema is built from (src/config/configSchema.ts, src/config/configSubscribers.ts). */

export const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:8787')
  .refine((v) => Number(v.slice(v.lastIndexOf(':') + 1)) <= 65535, 'port must be at most 65535');

export const httpUrl = z
  .string()
  .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'expected an http(s) URL');

export const apiPath = z.string().regex(/^\//, 'expected a path starting with /');
export const positiveInt = z.number().int().positive();
export const nonNegativeInt = z.number().int().min(0);
