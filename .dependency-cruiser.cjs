/**
 * metalflow's layer rules (docs/architecture.md, "Layers"), checked by `npm run lint:layers`
 * and test/unit/layers.test.ts. Read top to bottom: model is the floor; contracts sit on it;
 * clients do I/O with peers and know nothing of Temporal's workflows; workflows decide and reach
 * activities only through their types; nothing product-side imports the tests.
 */
const ABOVE_MODEL = '^(contracts|control|workflows|activities|clients|config|api|k8s|workers|bench|scripts|test)/';
const rule = (name, comment, from, to) => ({ name, comment, severity: 'error', from: { path: from }, to });

module.exports = {
  forbidden: [
    { name: 'no-cycle', comment: 'Split by concept until no module needs the one that needs it.', severity: 'error', from: {}, to: { circular: true } },
    rule('model-is-the-floor', 'model/ is the domain: schemas, parsing, pure rules; it imports only model/.', '^model/', { path: ABOVE_MODEL }),
    rule('contracts-on-model', 'contracts/ are what callers of workflows import: model/ and @temporalio/workflow definitions only.', '^contracts/', { path: '^(control|workflows|activities|clients|config|api|k8s|workers|bench|scripts|test)/' }),
    rule('clients-are-peers', 'clients/ are I/O libraries for peers: no workflow, activity, contract or process code.', '^clients/', { path: '^(contracts|control|workflows|activities|config|api|k8s|workers|bench|scripts|test)/' }),
    rule('workflows-decide', 'Workflows do no I/O: no clients, no processes, no config.', '^workflows/', { path: '^(clients|control|config|api|k8s|workers|bench|scripts|test)/' }),
    rule('workflows-no-node', 'Workflow code runs in the sandbox: no Node.js modules.', '^workflows/', { dependencyTypes: ['core'] }),
    { name: 'workflows-see-activity-types', comment: 'A workflow reaches an activity through proxyActivities<typeof …>: type-only imports.', severity: 'error', from: { path: '^workflows/' }, to: { path: '^activities/', dependencyTypesNot: ['type-only'] } },
    rule('activities-below-workflows', 'Activities do I/O for workflows; they import contracts, never workflow code.', '^activities/', { path: '^(workflows|api|k8s|workers|bench|scripts|test)/' }),
    rule('control-below-processes', 'control/ is metalflow\'s own Temporal and API façade for the API, controller and activities.', '^control/', { path: '^(workflows|activities|api|k8s|workers|bench|scripts|test)/' }),
    rule('config-reads-environment', 'config/ reads the environment into typed settings.', '^config/', { path: '^(contracts|control|workflows|activities|api|k8s|workers|bench|test)/' }),
    rule('api-and-controller-start-workflows', 'The API and the controller reach workflows through contracts/ and control/, never their code.', '^(api|k8s)/', { path: '^(workflows|activities|workers|bench|test)/' }),
    rule('no-test-imports', 'Product code, bench and scripts never import test/.', '^(model|contracts|control|workflows|activities|clients|config|api|k8s|workers|bench|scripts)/', { path: '^test/' }),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mts', '.mjs', '.js', '.json'] },
    exclude: { path: '(^|/)(node_modules|test/fixtures)/' },
  },
};
