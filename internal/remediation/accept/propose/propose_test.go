package propose

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/github"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
)

const gitToken = "ghp_CANARY_propose_0123456789abcdef"

// The root module is envs/prod of the repository.
var published = map[string]string{
	"README.md":                     "# infra\n",
	"envs/prod/main.tf":             "resource \"aws_instance\" \"web\" {\n  instance_type = \"t3.micro\"\n}\n",
	"envs/prod/terraform.tfvars":    "region = \"eu-west-1\"\n",
	"envs/modules/app/variables.tf": "variable \"size\" {\n  default = 1\n}\n",
}

// change is a proven change of the root module envs/prod: its paths are
// relative to it, one of them in a module beside it.
func change() *accept.Result {
	return &accept.Result{
		Files: []accept.File{
			{Path: "main.tf", Old: []byte(published["envs/prod/main.tf"]), New: []byte("resource \"aws_instance\" \"web\" {\n  instance_type = \"t3.large\"\n}\n")},
			{Path: "../modules/app/variables.tf", Old: []byte(published["envs/modules/app/variables.tf"]), New: []byte("variable \"size\" {\n  default = 3\n}\n")},
		},
		Accepted: []accept.Accepted{
			{Address: "aws_instance.web", Attribute: "instance_type", Where: "main.tf:2", Kind: accept.KindLiteral},
			{Address: "module.app.aws_autoscaling_group.g", Attribute: "desired_capacity", Where: "../modules/app/variables.tf:2", Kind: accept.KindDefault},
		},
		Refused: []accept.Refusal{{Address: "aws_s3_bucket.logs", Attribute: "tags", Reason: "set by a function call (merge), which cannot be inverted"}},
	}
}

// forge is a git server with one repository and a forge's API.
type forge struct {
	git     *gittest.Server
	name    string // the repository's path on the git server
	url     string
	commit  string
	opener  notify.ChangeOpener
	secrets []string
}

func newForge(t *testing.T, name string, opener func(*testing.T) (notify.ChangeOpener, []string)) *forge {
	t.Helper()
	f := &forge{git: gittest.NewServer(t, gitToken), name: name}
	f.url, f.commit = f.git.Publish(t, name, published)
	f.opener, f.secrets = opener(t)
	f.secrets = append(f.secrets, gitToken)
	return f
}

func (f *forge) request(t *testing.T, cache string) Request {
	creds := notifytest.SecretFile(t, "git-token", gitToken)
	return Request{
		Workspace: "Prod / EU",
		Git:       source.Git{URL: f.url, Ref: "main", Path: "envs/prod", CredentialsFile: creds},
		CacheDir:  cache,
		Commit:    f.commit,
		Change:    change(),
		Tool:      "Terraform v1.9.8",
		Link:      "https://driftwatch.example.com/workspaces/prod-eu",
		Opener:    f.opener,
		Labels:    []string{"driftwatch"},
	}
}

// branchFile is a file of a branch of the forge's repository.
func (f *forge) branchFile(t *testing.T, branch, path string) string {
	return gittest.Run(t, f.git.Bare(f.name), "show", branch+":"+path)
}

func githubForge(t *testing.T) (*forge, *notifytest.GitHubServer) {
	srv := notifytest.NewGitHubServer(t)
	f := newForge(t, "driftwatch-test/infra.git", func(t *testing.T) (notify.ChangeOpener, []string) {
		n, err := github.New(github.Config{Name: "gh", TokenFile: srv.TokenFile, Repository: srv.Repository(), APIURL: srv.URL(), Timeout: 10 * time.Second},
			srv.HTTPClient(), slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		return n, srv.Secrets()
	})
	return f, srv
}

func gitlabForge(t *testing.T) (*forge, *notifytest.GitLabServer) {
	srv := notifytest.NewGitLabServer(t)
	f := newForge(t, notifytest.GitLabProjectPath+".git", func(t *testing.T) (notify.ChangeOpener, []string) {
		n, err := gitlab.New(gitlab.Config{Name: "gl", TokenFile: srv.TokenFile, Project: notifytest.GitLabProjectPath, APIURL: srv.URL(), Timeout: 10 * time.Second},
			srv.HTTPClient(), slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		return n, srv.Secrets()
	})
	return f, srv
}

func TestProposeGitHub(t *testing.T) {
	f, srv := githubForge(t)
	req := f.request(t, t.TempDir())

	got, err := Propose(t.Context(), req)
	require.NoError(t, err)
	wantBranch := Branch(DefaultBranchPrefix, req.Workspace, map[string][]byte{
		"envs/prod/main.tf": change().Files[0].New, "envs/modules/app/variables.tf": change().Files[1].New,
	})
	require.Regexp(t, `^driftwatch/accept/prod-eu-[0-9a-f]{10}$`, wantBranch)
	require.Equal(t, wantBranch, got.Branch)
	require.Equal(t, "main", got.Base)
	require.Equal(t, notify.ChangeProposal{Number: 1, URL: got.URL}, got.ChangeProposal)
	require.Contains(t, got.URL, "/driftwatch-test/infra/pull/1")

	// The branch holds the change at repository paths, on the commit.
	require.Equal(t, strings.TrimSpace(string(change().Files[0].New)), f.branchFile(t, got.Branch, "envs/prod/main.tf"))
	require.Equal(t, strings.TrimSpace(string(change().Files[1].New)), f.branchFile(t, got.Branch, "envs/modules/app/variables.tf"))
	require.Equal(t, "region = \"eu-west-1\"", f.branchFile(t, got.Branch, "envs/prod/terraform.tfvars"))
	require.Equal(t, f.commit, gittest.Run(t, f.git.Bare(f.name), "rev-parse", got.Branch+"^"))
	require.Equal(t, got.Commit, gittest.Run(t, f.git.Bare(f.name), "rev-parse", got.Branch))

	require.Equal(t, "driftwatch <driftwatch@localhost>", gittest.Run(t, f.git.Bare(f.name), "log", "--format=%an <%ae>", "-1", got.Branch))
	pulls := srv.Pulls()
	require.Len(t, pulls, 1)
	require.Equal(t, notifytest.GitHubPull{Number: 1, Title: "driftwatch: accept drift of Prod / EU (2 attributes)", Body: Body(req),
		State: "open", Head: got.Branch, Base: "main", Labels: []string{"driftwatch"}}, pulls[0])

	// Again, from another cache: the same branch, commit and request.
	again, err := Propose(t.Context(), f.request(t, t.TempDir()))
	require.NoError(t, err)
	got.Existing = true
	require.Equal(t, got, again)
	require.Len(t, srv.Pulls(), 1)
	requireNoSecrets(t, f, Body(req), gittest.Run(t, f.git.Bare(f.name), "log", "--format=%B", "-1", got.Branch))
}

func TestProposeGitLab(t *testing.T) {
	f, srv := gitlabForge(t)
	req := f.request(t, t.TempDir())
	req.Author = source.Identity{Name: "Accept Bot"} // the e-mail defaults alone

	got, err := Propose(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, "main", got.Base)
	require.Equal(t, 1, got.Number)
	require.False(t, got.Existing)
	mrs := srv.MergeRequests()
	require.Len(t, mrs, 1)
	require.Equal(t, got.Branch, mrs[0].SourceBranch)
	require.Equal(t, "main", mrs[0].TargetBranch)
	require.Equal(t, Body(req), mrs[0].Description)
	require.Equal(t, []string{"driftwatch"}, mrs[0].Labels)
	require.Equal(t, "Accept Bot <driftwatch@localhost>", gittest.Run(t, f.git.Bare(f.name), "log", "--format=%an <%ae>", "-1", got.Branch))
	// The project is the repository's path, subgroups kept.
	for _, r := range srv.Requests() {
		require.True(t, strings.HasPrefix(r.Path, "/api/v4/projects/platform%2Finfra%2Fdrift-alerts/"), r.Path)
	}

	again, err := Propose(t.Context(), req)
	require.NoError(t, err)
	got.Existing = true
	require.Equal(t, got, again)
	require.Len(t, srv.MergeRequests(), 1)
}

// Concurrent proposals of one change give one branch, one commit and one
// request.
func TestProposeConcurrent(t *testing.T) {
	for name, start := range map[string]func(*testing.T) (*forge, func() int){
		"github": func(t *testing.T) (*forge, func() int) {
			f, srv := githubForge(t)
			return f, func() int { return len(srv.Pulls()) }
		},
		"gitlab": func(t *testing.T) (*forge, func() int) {
			f, srv := gitlabForge(t)
			return f, func() int { return len(srv.MergeRequests()) }
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, requests := start(t)
			cache := t.TempDir()
			const n = 5
			got := make([]Proposal, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				req := f.request(t, cache)
				if i%2 == 1 {
					req.CacheDir = t.TempDir()
				}
				wg.Go(func() { got[i], errs[i] = Propose(t.Context(), req) })
			}
			wg.Wait()
			opened := 0
			for i := range n {
				require.NoError(t, errs[i])
				require.Equal(t, got[0].Branch, got[i].Branch)
				require.Equal(t, got[0].Commit, got[i].Commit)
				require.Equal(t, got[0].Number, got[i].Number)
				if !got[i].Existing {
					opened++
				}
			}
			require.Equal(t, 1, opened)
			require.Equal(t, 1, requests())
			branches := gittest.Run(t, f.git.Bare(f.name), "for-each-ref", "--format=%(refname)", "refs/heads/driftwatch/")
			require.Equal(t, "refs/heads/"+got[0].Branch, branches)
		})
	}
}

// A failure names the step and carries no token.
func TestProposeErrors(t *testing.T) {
	f, srv := githubForge(t)

	// Refused before anything runs.
	for name, change := range map[string]func(*Request){
		"no opener":    func(r *Request) { r.Opener = nil },
		"no change":    func(r *Request) { r.Change = nil },
		"nothing":      func(r *Request) { r.Change = &accept.Result{} },
		"no commit":    func(r *Request) { r.Commit = "" },
		"no cache":     func(r *Request) { r.CacheDir = "" },
		"no workspace": func(r *Request) { r.Workspace = " " },
		"outside":      func(r *Request) { r.Git.Path = ""; r.Change.Files[0].Path = "../x.tf" },
		"ssh url":      func(r *Request) { r.Git.URL = "git@github.com:acme/infra.git" },
	} {
		t.Run(name, func(t *testing.T) {
			req := f.request(t, t.TempDir())
			change(&req)
			_, err := Propose(t.Context(), req)
			require.Error(t, err)
			require.Empty(t, f.git.URLs(), "nothing reaches the git server")
		})
	}

	// The forge refuses: the branch is pushed, the error says so.
	srv.FailOn("POST", "/pulls", notifytest.Failure{Status: 403, Body: `{"message":"Resource not accessible by integration"}`})
	_, err := Propose(t.Context(), f.request(t, t.TempDir()))
	require.ErrorContains(t, err, "propose Prod / EU: branch driftwatch/accept/prod-eu-")
	require.ErrorContains(t, err, "github gh: open pull request in driftwatch-test/infra: status 403: Resource not accessible by integration (the token lacks pull-request write")
	requireNoSecrets(t, f, err.Error())

	// The git server refuses the token.
	req := f.request(t, t.TempDir())
	req.Git.CredentialsFile = notifytest.SecretFile(t, "wrong", "ghp_wrong")
	_, err = Propose(t.Context(), req)
	require.ErrorIs(t, err, source.ErrAuthFailed)
	requireNoSecrets(t, f, err.Error())

	// A context that ends while another proposal of the branch runs.
	req = f.request(t, t.TempDir())
	unlock, err := lock(t.Context(), Branch(DefaultBranchPrefix, req.Workspace, map[string][]byte{
		"envs/prod/main.tf": change().Files[0].New, "envs/modules/app/variables.tf": change().Files[1].New,
	}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = Propose(ctx, req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "waiting for another proposal of branch driftwatch/accept/prod-eu-")
	unlock()
}

func requireNoSecrets(t *testing.T, f *forge, texts ...string) {
	t.Helper()
	for _, s := range texts {
		for _, secret := range f.secrets {
			require.NotContains(t, s, secret)
		}
	}
}

func TestRepositoryOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/acme/infra.git":                 "acme/infra",
		"https://github.com/acme/infra":                     "acme/infra",
		"https://github.com/acme/infra/":                    "acme/infra",
		"https://gitlab.example.com/group/sub/infra.git":    "group/sub/infra",
		"https://ghe.example.com:8443/acme/infra.git":       "acme/infra",
		"http://127.0.0.1:3000/platform/infra/drift-alerts": "platform/infra/drift-alerts",
	} {
		got, err := RepositoryOf(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "https://github.com/infra.git", "https://github.com/", "git@github.com:acme/infra.git", "/srv/git/infra", "file:///srv/acme/infra.git", "https://h/a//b"} {
		_, err := RepositoryOf(bad)
		require.Error(t, err, bad)
	}
}

func TestBranch(t *testing.T) {
	files := map[string][]byte{"a.tf": []byte("one"), "b/c.tf": []byte("two")}
	b := Branch("driftwatch/accept", "prod", files)
	require.Regexp(t, `^driftwatch/accept/prod-[0-9a-f]{10}$`, b)
	require.Equal(t, b, Branch("driftwatch/accept/", "prod", map[string][]byte{"b/c.tf": []byte("two"), "a.tf": []byte("one")}))
	require.NotEqual(t, b, Branch("driftwatch/accept", "prod", map[string][]byte{"a.tf": []byte("one"), "b/c.tf": []byte("three")}))
	require.NotEqual(t, b, Branch("driftwatch/accept", "prod", map[string][]byte{"a.tf": []byte("one"), "b/d.tf": []byte("two")}))
	for ws, want := range map[string]string{
		"prod":                        "prod",
		"Prod / EU":                   "prod-eu",
		"team..a/b.lock":              "team-a-b-lock",
		"---":                         "workspace",
		"ünïcode":                     "n-code",
		strings.Repeat("abcdefgh", 9): strings.Repeat("abcdefgh", 5),
	} {
		got := Branch("p", ws, files)
		require.Equal(t, "p/"+want+"-"+got[len(got)-10:], got, ws)
	}
}

func TestBody(t *testing.T) {
	req := Request{
		Workspace: "prod`|x", Commit: "0123456789abcdef0123456789abcdef01234567", Tool: "OpenTofu v1.8.0",
		Link: "https://dw.example.com/w/prod", Git: source.Git{Path: "envs/prod/"}, Change: change(),
	}
	require.Equal(t, "driftwatch: accept drift of prod`|x (2 attributes)", Title(req.Workspace, req.Change))
	require.Equal(t, "### driftwatch: accept the drift of ``prod`|x`` as code\n\n"+
		"Something changed these resources outside Terraform, and the change was meant: this request makes the configuration say what exists, so that once it is merged the next check of ``prod`|x`` is clean.\n\n"+
		"- **Workspace:** ``prod`|x`` · [workspace page](https://dw.example.com/w/prod)\n"+
		"- **Base commit:** `0123456789abcdef0123456789abcdef01234567` (root module `envs/prod`)\n"+
		"- **Proof:** a plan of the changed code with `OpenTofu v1.8.0` shows no change for the accepted resources and nothing new.\n\n"+
		"#### Accepted (2)\n\n| Address | Attribute | Rewritten at | Set by |\n| --- | --- | --- | --- |\n"+
		"| `aws_instance.web` | `instance_type` | `envs/prod/main.tf:2` | `literal` |\n"+
		"| `module.app.aws_autoscaling_group.g` | `desired_capacity` | `envs/modules/app/variables.tf:2` | `variable default` |\n\n"+
		"#### Not accepted (1)\n\nLeft as drift: each needs a person's change, or stays to be reverted.\n\n| Address | Attribute | Why |\n| --- | --- | --- |\n"+
		"| `aws_s3_bucket.logs` | `tags` | `set by a function call (merge), which cannot be inverted` |\n\n"+
		"_Attribute values are not shown here: the diff has them. driftwatch proposes the same change on the same branch, so accepting it again reuses this request._\n",
		Body(req))

	// A link that is not http(s), or would break out of the Markdown
	// link, is left out; no refusals, no section.
	req.Link, req.Change.Refused, req.Git.Path = "javascript:alert(1)", nil, ""
	body := Body(req)
	require.Contains(t, body, "- **Workspace:** ``prod`|x``\n- **Base commit:** `0123456789abcdef0123456789abcdef01234567`\n")
	require.NotContains(t, body, "Not accepted")
	require.NotContains(t, body, "javascript")
	require.NotContains(t, body, "Deletions")

	// An accepted deletion is counted apart, and the body says what its
	// removed block does; the commit names it without an attribute.
	req.Change.Accepted = append(req.Change.Accepted, accept.Accepted{Address: "aws_s3_bucket.scratch", Where: "main.tf:9", Kind: accept.KindRemoved})
	require.Equal(t, "driftwatch: accept drift of prod`|x (2 attributes, 1 deletion)", Title(req.Workspace, req.Change))
	body = Body(req)
	require.Contains(t, body, "- **Deletions:** each `removed block` keeps a resource deleted outside Terraform out of the code without destroying anything; "+
		"the workspace's next apply drops it from the state.\n")
	require.Contains(t, body, "| `aws_s3_bucket.scratch` |  | `main.tf:9` | `removed block` |\n")
	require.Contains(t, commitMessage("t", req), "\n- aws_s3_bucket.scratch: main.tf:9 (removed block)\n")
}
