// One linter for the whole tree. The layer rule keeps dependencies pointing downwards (see docs/architecture.md, "Folders").
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Only folders that exist: a layer list that names missing folders checks nothing for them.
const managers = [
  'config',
  'pod',
  'podworkers',
  'pleg',
  'prober',
  'status',
  'volume',
  'nodestatus',
  'eviction',
  'images',
  'logs',
  'stats',
  'cm',
  'server',
  'events',
  'certificate',
  'oom',
  'nodepage',
  'nodeshutdown',
  'podresources',
  'runtimeclass',
  'pluginmanager',
];
const allFolders = [
  'lib',
  'api',
  'cri',
  'k8s',
  'credentialprovider',
  'kuberuntime',
  ...managers,
  'kubelet',
  'cli',
  'cmd',
];
// What each folder of src/ may import from, besides itself.
const mayImport = {
  lib: [],
  api: ['lib'],
  cri: ['lib'],
  k8s: ['lib', 'api'],
  // Registry credentials from the node's exec plugins (upstream pkg/credentialprovider), for pulls.
  credentialprovider: ['lib'],
  kuberuntime: ['lib', 'api', 'cri', 'credentialprovider'],
  ...Object.fromEntries(managers.map((m) => [m, ['lib', 'api', 'cri', 'k8s', 'kuberuntime']])),
  kubelet: allFolders.filter((f) => f !== 'cmd' && f !== 'cli'),
  // The command line reads the running kubelet over HTTP: the API's types and its own printers.
  cli: ['lib', 'api', 'events'],
  cmd: allFolders,
};

// Managers talk to each other through small interfaces: a sibling manager's types may be imported
// (import type), its values (classes, functions) may not; the wiring in kubelet/ and cmd/ joins them.
const layerRules = Object.entries(mayImport).map(([folder, allowed]) => {
  const siblings = managers.includes(folder) ? managers.filter((m) => m !== folder) : [];
  const forbidden = allFolders.filter((f) => f !== folder && !allowed.includes(f) && !siblings.includes(f));
  const patterns = [];
  if (forbidden.length)
    patterns.push({
      group: forbidden.map((f) => `**/${f}/*`),
      message: `src/${folder} may not import from a higher layer`,
    });
  if (siblings.length)
    patterns.push({
      group: siblings.map((f) => `**/${f}/*`),
      message: `src/${folder} may import only types from a sibling manager (import type)`,
      allowTypeImports: true,
    });
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
  };
});

export default tseslint.config(
  // Generated protobuf code (npm run gen:cri) is checked by regenerating it, not by the linter.
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.stack/**',
      'src/cri/generated/**',
      'src/cri/containerd-events/generated/**',
      'src/cm/devicemanager/generated/**',
      'src/podresources/generated/**',
      'src/cri/containerd-content/generated/**',
      'src/pluginmanager/generated/**',
      'src/volume/csi/generated/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  // The node page's script runs in the browser.
  {
    files: ['src/nodepage/assets/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        fetch: 'readonly',
        setInterval: 'readonly',
        setTimeout: 'readonly',
        location: 'readonly',
        history: 'readonly',
        localStorage: 'readonly',
        TextDecoderStream: 'readonly',
      },
    },
  },
  // Durations come from monotonicMs (src/lib/clock.ts): the first touch of the `performance` global
  // loads perf_hooks and eight modules behind it, 0.35 MiB of an idle kubelet.
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        {
          name: 'performance',
          message: 'use monotonicMs() from src/lib/clock.ts (performance loads perf_hooks)',
        },
      ],
    },
  },
  // Size limits (issue 35): no hand-written source file over 800 lines (blank lines aside), no
  // function over 120 lines (blank lines and comments aside). Generated code is ignored above; tests,
  // benches and scripts are left out (a test file is a list of cases inside one describe()).
  {
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 800, skipBlankLines: true, skipComments: false }],
      'max-lines-per-function': [
        'error',
        { max: 120, skipBlankLines: true, skipComments: true, IIFEs: true },
      ],
    },
  },
  // A declarative table, one entry per flag: read as a table, not as code.
  { files: ['src/cmd/flags.ts'], rules: { 'max-lines': 'off' } },
  ...layerRules,
);
