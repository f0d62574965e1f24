/**
 * `transactionTimestamp` must reach the operator as ISO 8601 with milliseconds and `Z` (interface
 * 2.1). Anything that names one instant unambiguously is normalized to that form; a time without a
 * zone (whose local time?) or an impossible date is refused.
 */
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)$/;

/** The instant as `YYYY-MM-DDTHH:mm:ss.sssZ`, or undefined when it is not a complete, real date-time. */
export function normalizeTimestamp(value: string): string | undefined {
  const m = ISO_DATE_TIME.exec(value.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = '00', fraction = '', zone = 'Z'] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  // Date.parse rolls 2026-02-30 into March; check the calendar date ourselves.
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (
    calendar.getUTCFullYear() !== year ||
    calendar.getUTCMonth() !== month - 1 ||
    calendar.getUTCDate() !== day
  ) {
    return undefined;
  }
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = `${fraction}000`.slice(0, 3);
  const offset = /^[Zz]$/.test(zone)
    ? 'Z'
    : zone.length === 3
      ? `${zone}:00`
      : zone.replace(/^([+-]\d{2}):?(\d{2})$/, '$1:$2');
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${millis}${offset}`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
