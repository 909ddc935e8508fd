#!/usr/bin/env python3
"""Validate Kubernetes manifests: the built-in kinds against the schema of a
pinned Kubernetes version (kubernetes-validate, strict: unknown fields are
errors), JobSets against JobSet's vendored CRD schema (infra/k8s/crds, with
unknown fields made errors the same way), and every container's environment
for credentials written as literal values.

    infra/k8s/test/validate.py FILE_OR_DIR...

Prints one line per object and exits 1 when any fails. Directories are
searched for *.yaml and *.yml (crds/ is skipped).
"""
import copy
import pathlib
import re
import sys

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.33.0"
HERE = pathlib.Path(__file__).resolve().parent
CRD = HERE.parent / "crds" / "jobset.x-k8s.io_jobsets.yaml"
# Variables whose value is a secret: they must come from a Secret (valueFrom).
SECRET_NAME = re.compile(r"SECRET|TOKEN|PASSWORD|ACCESS_KEY|API_KEY|CREDENTIAL|SERVICE_ACCOUNT|CLIENT_KEY|SAS", re.I)


def strict(schema):
    """The schema with additionalProperties: false on every object that lists
    its properties and does not keep unknown fields, as the API server's
    strict field validation treats them."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if ("properties" in out and "additionalProperties" not in out
                and not out.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def jobset_validator():
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    schema = strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
    # metadata is `type: object` in a CRD; the API server checks it as ObjectMeta.
    schema["properties"]["metadata"] = {"type": "object"}
    return jsonschema.Draft4Validator(schema)


def containers(obj):
    """Every container and init container in obj, wherever its pod template sits."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("containers", "initContainers") and isinstance(v, list):
                yield from v
            else:
                yield from containers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from containers(v)


def literal_secrets(obj):
    bad = []
    for c in containers(obj):
        for e in c.get("env") or []:
            if SECRET_NAME.search(e.get("name", "")) and "value" in e:
                bad.append(f"container {c.get('name')}: env {e['name']} has a literal value (use valueFrom.secretKeyRef)")
            ref = (e.get("valueFrom") or {})
            if SECRET_NAME.search(e.get("name", "")) and "value" not in e and "secretKeyRef" not in ref:
                bad.append(f"container {c.get('name')}: env {e['name']} does not come from a Secret")
    return bad


def files(args):
    for a in args:
        p = pathlib.Path(a)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.suffix in (".yaml", ".yml") and "crds" not in f.parts:
                    yield f
        else:
            yield p


def main(args):
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    js = jobset_validator()
    failed = checked = 0
    for f in files(args):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc is None:
                continue
            checked += 1
            name = f"{f}: {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
            errors = literal_secrets(doc)
            if doc.get("apiVersion") == "jobset.x-k8s.io/v1alpha2" and doc.get("kind") == "JobSet":
                errors += [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in js.iter_errors(doc)]
                against = "JobSet v0.12.0 CRD"
            else:
                try:
                    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
                except kubernetes_validate.ValidationError as e:
                    errors.append(f"{'.'.join(map(str, e.path))}: {e.message}")
                except Exception as e:  # unknown kind or version
                    errors.append(f"{type(e).__name__}: {e}")
                against = f"Kubernetes {KUBERNETES_VERSION}"
            if errors:
                failed += 1
                print(f"FAIL {name} ({against})")
                for e in errors:
                    print(f"     {e}")
            else:
                print(f"ok   {name} ({against})")
    print(f"{checked - failed} passed, {failed} failed")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
