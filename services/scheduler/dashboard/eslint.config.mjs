// ESLint's configuration for the dashboard's scripts (static/*.js): classic scripts, not modules,
// loaded by the pages in this order and sharing the page's global scope:
//   chart.min.js (Chart.js, embedded from Debian's libjs-chart.js) defines Chart;
//   charts.js defines tunebusCharts; dashboard.js defines the helpers trial.js uses;
//   control.js and trial.js define no globals.
// A script's globals are declared for the scripts that read them (`globals` below) and marked
// /* exported */ in the script that defines them.
import js from '@eslint/js';
import globals from 'globals';

// dashboard.js's globals that trial.js reads.
const dashboardHelpers = Object.fromEntries(
  [
    'PALETTE',
    '$',
    'el',
    'fmt',
    'getJson',
    'showError',
    'throttle',
    'connectEvents',
    'statusCell',
    'card',
    'chartsAvailable',
    'lineDataset',
    'drawLineChart',
  ].map((name) => [name, 'readonly']),
);

export default [
  js.configs.recommended,
  {
    files: ['static/**/*.js'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'script',
      globals: { ...globals.browser, Chart: 'readonly' },
    },
    rules: {
      eqeqeq: 'error',
      'no-var': 'error',
      'prefer-const': 'error',
      'no-shadow': 'error',
      'no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_' }],
      strict: ['error', 'global'],
      // A function is short enough to read whole; the scripts' wrappers (IIFEs) are not counted.
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
    },
  },
  { files: ['static/dashboard.js'], languageOptions: { globals: { tunebusCharts: 'readonly' } } },
  { files: ['static/trial.js'], languageOptions: { globals: dashboardHelpers } },
];
