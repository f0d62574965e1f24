import type { z } from 'zod';
import { closestName } from '../common/didYouMean.js';
import { configSchema } from './configSchema.js';

/**
 * The keys the configuration schema knows at a place in the TOML document, so that a misspelled
 * key is answered with the key it most likely meant ("unknown key databse (did you mean database?)").
 */

type Schema = z.core.$ZodType;

/** The schema under its wrappers: defaults, optionals, pipes (transforms) and refinements. */
function unwrap(schema: Schema): Schema {
  let s = schema;
  for (;;) {
    const def = s._zod.def as unknown as { type: string; innerType?: Schema; in?: Schema };
    if ((def.type === 'default' || def.type === 'optional' || def.type === 'nullable') && def.innerType)
      s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else return s;
  }
}

/** The keys of the table at `path` (as a zod issue spells it: names, and indexes of arrays of tables). */
export function knownKeysAt(path: readonly PropertyKey[], root: Schema = configSchema): string[] {
  let s = unwrap(root);
  for (const step of path) {
    const def = s._zod.def as unknown as {
      type: string;
      element?: Schema;
      shape?: Record<string, Schema>;
    };
    if (def.type === 'array' && def.element && typeof step === 'number') s = unwrap(def.element);
    else if (def.type === 'object' && def.shape && typeof step === 'string' && def.shape[step])
      s = unwrap(def.shape[step]);
    else return [];
  }
  const def = s._zod.def as unknown as { type: string; shape?: Record<string, Schema> };
  return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

/** "unknown key outbox.concurency (did you mean outbox.concurrency?)": one line per unknown key. */
export function unknownKeyProblems(
  where: string,
  path: readonly PropertyKey[],
  keys: readonly string[],
): string[] {
  const known = knownKeysAt(path);
  const dotted = (k: string) => (where ? `${where}.${k}` : k);
  return keys.map((k) => {
    const meant = closestName(k, known);
    return `unknown key ${dotted(k)}${meant === undefined ? '' : ` (did you mean ${dotted(meant)}?)`}`;
  });
}
