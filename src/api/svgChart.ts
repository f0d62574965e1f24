import { escapeHtml as esc } from './html.js';

/**
 * Small server-rendered SVG charts for the status page: a title that says what is measured, a y
 * axis with its unit and ticks, a time axis over the last 24 hours, and a legend naming every
 * series. The SVG scales to its container (viewBox + width 100%), so a phone gets the same chart
 * narrower instead of a page that scrolls sideways. No JavaScript.
 */

export interface ChartSeries {
  name: string;
  color: string;
  /** x in [0, 1] across the last 24 hours (1 = now); y in the chart's unit. */
  points: Array<{ x: number; y: number }>;
}

export interface ChartSpec {
  /** What the chart measures, e.g. "Sync run duration by resource, last 24 h". */
  title: string;
  /** The y axis' unit, spelled out, e.g. "seconds". */
  yUnit: string;
  kind: 'dots' | 'bars';
  series: ChartSeries[];
  /** DOM id of the figure. */
  id: string;
}

const W = 520;
const H = 170;
const LEFT = 48;
const RIGHT = 10;
const TOP = 10;
const BOTTOM = 38;

/** A round upper bound for the axis: 1, 2, 5, 10, 20, 50, ... at or above `max`. */
export function niceCeiling(max: number): number {
  if (!(max > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= max) return step * magnitude;
  return 10 * magnitude;
}

const fmt = (v: number) => String(Number(v.toPrecision(2)));

export function renderChart(spec: ChartSpec): string {
  const maxY = niceCeiling(Math.max(0, ...spec.series.flatMap((s) => s.points.map((p) => p.y))));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const xOf = (x: number) => LEFT + x * plotW;
  const yOf = (y: number) => TOP + plotH - (y / maxY) * plotH;
  const ticks = [0, maxY / 2, maxY]
    .map(
      (t) =>
        `<line x1="${LEFT - 4}" x2="${W - RIGHT}" y1="${yOf(t).toFixed(1)}" y2="${yOf(t).toFixed(1)}" stroke="#d0d7de"/>` +
        `<text class="tick" x="${LEFT - 6}" y="${(yOf(t) + 4).toFixed(1)}" text-anchor="end" font-size="13">${fmt(t)}</text>`,
    )
    .join('');
  const xTicks = [
    [0, '24 h ago'],
    [0.5, '12 h ago'],
    [1, 'now'],
  ] as const;
  const xLabels = xTicks
    .map(
      ([x, label]) =>
        `<text class="tick" x="${xOf(x).toFixed(1)}" y="${H - BOTTOM + 15}" text-anchor="${x === 0 ? 'start' : x === 1 ? 'end' : 'middle'}" font-size="13">${label}</text>`,
    )
    .join('');
  const barW = Math.max(3, plotW / 30);
  const marks = spec.series
    .flatMap((s) =>
      s.points.map((p) => {
        const x = xOf(p.x);
        const y = yOf(p.y);
        const tip = `<title>${esc(s.name)}: ${fmt(p.y)} ${esc(spec.yUnit)}</title>`;
        return spec.kind === 'bars'
          ? `<rect x="${(x - barW).toFixed(1)}" y="${y.toFixed(1)}" width="${(barW * 0.8).toFixed(1)}" height="${(TOP + plotH - y).toFixed(1)}" fill="${s.color}">${tip}</rect>`
          : `<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3.5" fill="${s.color}">${tip}</circle>`;
      }),
    )
    .join('');
  const legend = spec.series
    .map(
      (s) =>
        `<li><span class="swatch" style="background:${s.color}"></span>${esc(s.name)} <small>(${s.points.length} ${spec.kind === 'bars' ? 'hours' : 'runs'})</small></li>`,
    )
    .join('');
  return `<figure class="chart" id="${esc(spec.id)}"><figcaption>${esc(spec.title)}</figcaption>
<svg role="img" aria-label="${esc(spec.title)}" viewBox="0 0 ${W} ${H}" preserveAspectRatio="xMinYMin meet">
${ticks}<line x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${TOP + plotH}" stroke="#57606a"/><line x1="${LEFT}" y1="${TOP + plotH}" x2="${W - RIGHT}" y2="${TOP + plotH}" stroke="#57606a"/>
<text class="axis-label y" x="12" y="${TOP + plotH / 2}" transform="rotate(-90 12 ${TOP + plotH / 2})" text-anchor="middle" font-size="13">${esc(spec.yUnit)}</text>
${xLabels}<text class="axis-label x" x="${LEFT + plotW / 2}" y="${H - 4}" text-anchor="middle" font-size="13">time (UTC), last 24 h</text>
${marks}</svg><ul class="legend">${legend}</ul></figure>`;
}
