/**
 * The real workflow bundle with one module swapped: every import of
 * model/validate.ts from workflow code gets test/support/tightened-validate.ts
 * instead, as if the validation rules had been tightened in a later release.
 */
import { join, resolve } from 'node:path';
import type { Compiler } from 'webpack';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';

const REAL = join(REPO_ROOT, 'model', 'validate');
const TIGHTENED = join(REPO_ROOT, 'test', 'support', 'tightened-validate.ts');

const swapValidation = {
  apply(compiler: Compiler): void {
    compiler.hooks.normalModuleFactory.tap('tightened-validation', (factory) => {
      factory.hooks.beforeResolve.tap('tightened-validation', (data) => {
        const issuer = data.contextInfo.issuer;
        if (issuer === TIGHTENED || !data.request.startsWith('.')) return;
        if (resolve(data.context, data.request).replace(/\.ts$/, '') === REAL) data.request = TIGHTENED;
      });
    });
  },
};

export async function bundleWithTightenedValidation(): Promise<string> {
  const { code } = await bundleWorkflowCode({
    ...WORKFLOW_BUNDLE_OPTIONS,
    logger: new DefaultLogger('WARN'),
    webpackConfigHook: (config) => ({ ...config, plugins: [...(config.plugins ?? []), swapValidation] }),
  });
  if (!code.includes('refused by a validation rule added after')) throw new Error('the tightened validation module is not in the bundle');
  return code;
}
