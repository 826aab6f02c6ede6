// An inline SVG sparkline of the last values (no chart library: the console must work offline).
const NS = 'http://www.w3.org/2000/svg';

/** @param {number[]} values @param {{width?: number, height?: number, label: string}} options */
export function sparkline(values, { width = 160, height = 32, label }) {
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.setAttribute('class', 'spark');
  if (values.length < 2) return svg;
  const max = Math.max(...values, 1);
  const min = Math.min(...values, 0);
  const step = width / (values.length - 1);
  const y = (/** @type {number} */ v) => height - 2 - ((v - min) / (max - min || 1)) * (height - 4);
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute('points', values.map((v, i) => `${(i * step).toFixed(1)},${y(v).toFixed(1)}`).join(' '));
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', 'currentColor');
  line.setAttribute('stroke-width', '1.5');
  svg.append(line);
  return svg;
}
