/** Durations as health reads and says them. */

/** How long ago `iso` was, in ms at `now` (null for no time). */
export const ageMs = (iso: string | null, now: number) => (iso ? now - Date.parse(iso) : null);

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}
