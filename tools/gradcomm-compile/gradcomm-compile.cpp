//===- gradcomm-compile.cpp - MLIR training step -> object file -----------===//
//
// Part of the GradComm project.
//
// Runs the whole pipeline in process, once: partitioning (when the input
// carries shard.shard annotations), the chosen rewrite (dense | scalecom |
// local-topk | gossip | easgd), the lowering to the runtime and to memref IR
// (where the C header is written), the lowering to LLVM, LLVM's O2, and host
// code generation. Writes MLIR, LLVM IR, an object file or a shared library.
//
// The pipeline is lib/Pipelines' buildCompilePipeline; the strategy options
// are the pipeline option structs' own options, bound to flags here
// (`--ratio=8` sets ScaleComPipelineOptions::ratio), so each is declared
// once and means the same in gradcomm-opt and gradcomm-compile.
//
//===----------------------------------------------------------------------===//

#include "WrapperLiveRanges.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.h"
#include "gradcomm/InitAll.h"
#include "gradcomm/Pipelines/Pipelines.h"
#include "gradcomm/Target/CHeader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::OptionCategory category("gradcomm-compile options");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<step.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::Required,
                                       cl::cat(category));

using gradcomm::Strategy;
static cl::opt<Strategy> strategy(
    "strategy", cl::desc("How gradient all-reduces are communicated"),
    cl::init(Strategy::ScaleCom),
    cl::values(clEnumValN(Strategy::Dense, "dense", "dense all-reduce"),
               clEnumValN(Strategy::ScaleCom, "scalecom",
                          "ScaleCom CLT-k compression"),
               clEnumValN(Strategy::LocalTopk, "local-topk",
                          "local top-k + all-gather baseline"),
               clEnumValN(Strategy::Gossip, "gossip", "gossiping SGD"),
               clEnumValN(Strategy::GossipAsync, "gossip-async",
                          "asynchronous gossiping SGD (one-sided, random "
                          "peers by default)"),
               clEnumValN(Strategy::Easgd, "easgd",
                          "synchronous elastic averaging SGD"),
               clEnumValN(Strategy::EasgdAsync, "easgd-async",
                          "asynchronous elastic averaging SGD (center on "
                          "rank 0)")),
    cl::cat(category));

static cl::opt<std::string> onError(
    "on-error",
    cl::desc("What a failed runtime call does in the compiled step: abort "
             "(end the job with the message, the default) or return (the "
             "step returns at once on every rank; the trainer reads "
             "gradcomm_take_step_status())"),
    cl::value_desc("abort|return"), cl::init("abort"), cl::cat(category));

static cl::opt<int64_t> bucketElements(
    "bucket-elements",
    cl::desc("After the strategy's rewrite, fuse neighbouring dense "
             "all-reduces into buckets of at most this many elements "
             "(gradcomm-bucket-all-reduces); 0, the default: off"),
    cl::init(0), cl::cat(category));

static cl::opt<bool> overlap(
    "overlap",
    cl::desc("Start each dense all-reduce and fused ScaleCom step where it "
             "is and wait for it where its result is first needed, so "
             "computation and the next tensors' selection run while it is "
             "in flight (gradcomm-overlap-collectives; CPU backend)"),
    cl::init(false), cl::cat(category));

static cl::opt<bool> blasMatmuls(
    "blas-matmuls",
    cl::desc("Float32 matrix products (linear layers, im2col convolutions, "
             "attention) as calls of libgradcomm_blas (serial OpenBLAS sgemm) "
             "(convert-linalg-to-blas; the default). --blas-matmuls=false "
             "keeps them loops that sum each output in order, as a C++ "
             "reference does"),
    cl::init(true), cl::cat(category));

enum class Emit { Mlir, Llvm, Obj, Shared };
static cl::opt<Emit>
    emit("emit", cl::desc("What to write"), cl::init(Emit::Obj),
         cl::values(clEnumValN(Emit::Mlir, "mlir", "MLIR in the LLVM dialect"),
                    clEnumValN(Emit::Llvm, "llvm", "LLVM IR"),
                    clEnumValN(Emit::Obj, "obj", "an object file"),
                    clEnumValN(Emit::Shared, "shared", "a shared library")),
         cl::cat(category));

static cl::opt<std::string>
    headerFile("emit-header",
               cl::desc("Also write a C header declaring the entry points"),
               cl::value_desc("file"), cl::cat(category));

static cl::opt<std::string> runtimeDir(
    "runtime-dir",
    cl::desc("Directory of libgradcomm_runtime.so that --emit=shared links "
             "(default: ../lib beside gradcomm-compile)"),
    cl::value_desc("dir"), cl::cat(category));

static cl::opt<std::string>
    rpath("rpath",
          cl::desc("Run-time search path --emit=shared records (default: "
                   "the runtime directory; 'none' records none)"),
          cl::value_desc("dir"), cl::cat(category));

static cl::opt<std::string> targetCpu(
    "target-cpu",
    cl::desc("CPU to generate code for: native (this machine, the default), "
             "generic, or an LLVM CPU name (e.g. x86-64-v3, skylake); "
             "recorded in the object's .gradcomm.target section"),
    cl::value_desc("cpu"), cl::init("native"), cl::cat(category));

static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM optimization level, 0 to 3"),
                                  cl::value_desc("n"), cl::init(2),
                                  cl::cat(category));

static cl::opt<bool>
    timePhases("time-phases",
               cl::desc("Print the wall time of each compilation phase"),
               cl::init(false), cl::cat(category));

/// Wall time of one phase, printed with --time-phases.
class PhaseTimer {
public:
  explicit PhaseTimer(StringRef name)
      : name(name), start(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() {
    if (!timePhases)
      return;
    std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    llvm::errs() << "gradcomm-compile: phase " << name << ": "
                 << llvm::format("%.3f", elapsed.count()) << " s\n";
  }

private:
  StringRef name;
  std::chrono::steady_clock::time_point start;
};

//===----------------------------------------------------------------------===//
// Strategy options: the pipeline option structs, bound to flags
//===----------------------------------------------------------------------===//

namespace {

/// A flag naming a pipeline option, taken out of the command line.
struct PipelineFlag {
  std::string name;
  std::optional<std::string> value;
};

/// The option struct `strategy` configures, as a name and a lookup.
struct StrategyOptions {
  StringRef pipeline;
  std::function<cl::Option *(StringRef)> find;
  std::function<LogicalResult(StringRef)> parse;
};

} // namespace

static StringRef strategyName(Strategy chosen) {
  switch (chosen) {
  case Strategy::Dense:
    return "dense";
  case Strategy::ScaleCom:
    return "scalecom";
  case Strategy::LocalTopk:
    return "local-topk";
  case Strategy::Gossip:
    return "gossip";
  case Strategy::GossipAsync:
    return "gossip-async";
  case Strategy::Easgd:
    return "easgd";
  case Strategy::EasgdAsync:
    return "easgd-async";
  }
  llvm_unreachable("unknown strategy");
}

/// `pipelineOptions` seen through StrategyOptions.
template <typename PipelineOptions>
static StrategyOptions bindTo(StringRef pipeline,
                              PipelineOptions &pipelineOptions) {
  return StrategyOptions{
      pipeline,
      [&](StringRef name) { return pipelineOptions.findOption(name); },
      [&](StringRef text) {
        return pipelineOptions.parseFromString(text, llvm::errs());
      }};
}

static std::optional<StrategyOptions>
optionsFor(Strategy chosen, gradcomm::CompileOptions &options) {
  switch (chosen) {
  case Strategy::Dense:
    return std::nullopt;
  case Strategy::ScaleCom:
  case Strategy::LocalTopk:
    return bindTo("gradcomm-scalecom-pipeline", options.scalecom);
  case Strategy::Gossip:
  case Strategy::GossipAsync:
    return bindTo("gradcomm-gossip-pipeline", options.gossip);
  case Strategy::Easgd:
  case Strategy::EasgdAsync:
    return bindTo("gradcomm-easgd-pipeline", options.easgd);
  }
  llvm_unreachable("unknown strategy");
}

/// Takes every `--name[=value]` whose name is an option of a strategy's
/// pipeline out of `args` (so the driver's own parser never sees it).
static FailureOr<std::vector<PipelineFlag>>
takePipelineFlags(SmallVectorImpl<const char *> &args,
                  const gradcomm::CompileOptions &options) {
  std::vector<PipelineFlag> flags;
  SmallVector<const char *> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (i == 0 || !arg.starts_with("-") || arg == "-" || arg == "--") {
      kept.push_back(args[i]);
      continue;
    }
    auto [name, value] = arg.ltrim('-').split('=');
    cl::Option *option = options.scalecom.findOption(name);
    if (!option)
      option = options.gossip.findOption(name);
    if (!option)
      option = options.easgd.findOption(name);
    if (!option) {
      kept.push_back(args[i]);
      continue;
    }
    PipelineFlag flag{name.str(), std::nullopt};
    if (arg.contains('='))
      flag.value = value.str();
    else if (option->getValueExpectedFlag() == cl::ValueRequired) {
      if (i + 1 == args.size()) {
        llvm::errs() << "gradcomm-compile: --" << name << " needs a value\n";
        return failure();
      }
      flag.value = args[++i];
    }
    flags.push_back(std::move(flag));
  }
  args.assign(kept.begin(), kept.end());
  return flags;
}

/// Sets the chosen strategy's options from `flags`.
static LogicalResult applyPipelineFlags(ArrayRef<PipelineFlag> flags,
                                        gradcomm::CompileOptions &options) {
  std::optional<StrategyOptions> target = optionsFor(strategy, options);
  std::string text;
  // The asynchronous strategies are their pipeline with mode=async (and,
  // for gossip, the paper's random peers unless --schedule says otherwise).
  const bool async =
      strategy == Strategy::GossipAsync || strategy == Strategy::EasgdAsync;
  if (async) {
    text = "mode=async";
    auto given = [&](StringRef name) {
      return llvm::any_of(
          flags, [&](const PipelineFlag &flag) { return flag.name == name; });
    };
    if (given("mode")) {
      llvm::errs() << "gradcomm-compile: --strategy=" << strategyName(strategy)
                   << " is asynchronous: leave out --mode\n";
      return failure();
    }
    if (strategy == Strategy::GossipAsync && !given("schedule"))
      text += " schedule=random";
  }
  for (const PipelineFlag &flag : flags) {
    if (flag.name == "compressor") {
      llvm::errs() << "gradcomm-compile: choose the compressor with "
                      "--strategy=scalecom|local-topk, not --compressor\n";
      return failure();
    }
    if (!target || !target->find(flag.name)) {
      llvm::errs() << "gradcomm-compile: --" << flag.name
                   << " does not apply to --strategy=" << strategyName(strategy)
                   << (target ? " (not an option of " + target->pipeline.str() +
                                    ")"
                              : std::string(" (it communicates densely)"))
                   << "\n";
      return failure();
    }
    if (flag.value &&
        llvm::any_of(*flag.value, [](char c) { return llvm::isSpace(c); })) {
      llvm::errs() << "gradcomm-compile: the value of --" << flag.name
                   << " must not contain spaces\n";
      return failure();
    }
    text += (text.empty() ? "" : " ") + flag.name +
            (flag.value ? "=" + *flag.value : std::string());
  }
  if (text.empty())
    return success();
  if (failed(target->parse(text))) {
    llvm::errs() << "gradcomm-compile: invalid strategy option in '" << text
                 << "'\n";
    return failure();
  }
  return success();
}

/// The help text of the strategy options, generated from the structs.
static std::string strategyOptionsHelp() {
  gradcomm::CompileOptions options;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "\nSTRATEGY OPTIONS (the options of gradcomm-opt's pipelines, as "
        "--name=value):\n";
  auto section = [&](StringRef title, auto &pipelineOptions) {
    os << "\n  " << title << ":\n";
    for (const std::string &name : pipelineOptions.optionNames()) {
      if (name == "compressor")
        continue;
      cl::Option *option = pipelineOptions.findOption(name);
      std::string flag =
          "--" + name +
          (option->getValueExpectedFlag() == cl::ValueRequired ? "=<value>"
                                                               : "");
      os << "    " << flag;
      os.indent(flag.size() < 28 ? 28 - flag.size() : 1);
      os << option->HelpStr << "\n";
    }
    os << "    defaults: ";
    pipelineOptions.print(os);
    os << "\n";
  };
  section("--strategy=scalecom | local-topk (gradcomm-scalecom-pipeline)",
          options.scalecom);
  section("--strategy=gossip (gradcomm-gossip-pipeline)", options.gossip);
  section("--strategy=easgd (gradcomm-easgd-pipeline)", options.easgd);
  return text;
}

//===----------------------------------------------------------------------===//
// Code generation
//===----------------------------------------------------------------------===//

/// The CPU name and feature string --target-cpu asks for.
static FailureOr<std::pair<std::string, std::string>>
resolveTargetCpu(const llvm::Target &target, const llvm::Triple &triple) {
  if (targetCpu == "native") {
    std::string features;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") +
                  std::string(feature.second ? "+" : "-") +
                  feature.first().str();
    return std::make_pair(llvm::sys::getHostCPUName().str(), features);
  }
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target.createMCSubtargetInfo(triple, "", ""));
  if (targetCpu != "generic" && info && !info->isCPUStringValid(targetCpu)) {
    llvm::errs() << "gradcomm-compile: unknown --target-cpu '" << targetCpu
                 << "' for " << triple.str()
                 << " (native, generic, or an LLVM CPU name)\n";
    return failure();
  }
  return std::make_pair(targetCpu.getValue(), std::string());
}

/// The target machine --target-cpu and --opt-level ask for, with `module`
/// set up for it: triple, data layout, CPU attributes on every function and
/// the record in the .gradcomm.target section.
static FailureOr<std::unique_ptr<llvm::TargetMachine>>
prepareTarget(llvm::Module &module) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    llvm::errs() << "gradcomm-compile: " << error << "\n";
    return failure();
  }
  if (optLevel > 3) {
    llvm::errs() << "gradcomm-compile: --opt-level must be 0 to 3, got "
                 << optLevel << "\n";
    return failure();
  }
  FailureOr<std::pair<std::string, std::string>> cpu =
      resolveTargetCpu(*target, triple);
  if (failed(cpu))
    return failure();
  const auto codegenLevel =
      llvm::CodeGenOpt::getLevel(static_cast<int>(optLevel.getValue()));
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu->first, cpu->second, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, codegenLevel.value_or(llvm::CodeGenOptLevel::Default)));
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", cpu->first);
    if (!cpu->second.empty())
      function.addFnAttr("target-features", cpu->second);
  }
  // What the code was compiled for, readable in the object
  // (`readelf -p .gradcomm.target step.o`): a step built for this machine's
  // CPU fails on an older one, and this says why.
  std::string record = "gradcomm-compile target-cpu=" + cpu->first +
                       " opt-level=" + std::to_string(optLevel) +
                       (cpu->second.empty() ? "" : " features=" + cpu->second);
  auto *text =
      llvm::ConstantDataArray::getString(module.getContext(), record, true);
  auto *global = new llvm::GlobalVariable(
      module, text->getType(), /*isConstant=*/true,
      llvm::GlobalValue::InternalLinkage, text, "__gradcomm_target");
  global->setSection(".gradcomm.target");
  llvm::appendToUsed(module, {global});
  return machine;
}

static LogicalResult writeObject(llvm::Module &module,
                                 llvm::TargetMachine &target, StringRef path) {
  llvm::TargetMachine *machine = &target;
  {
    PhaseTimer timer("llvm-optimize");
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder builder(machine);
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    const llvm::OptimizationLevel levels[] = {
        llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1,
        llvm::OptimizationLevel::O2, llvm::OptimizationLevel::O3};
    if (optLevel == 0) {
      builder.buildO0DefaultPipeline(levels[0]).run(module, mam);
    } else {
      // LLVM's per-function simplification, then its optimization pipeline
      // (loop vectorization, unrolling, ...), without the module
      // simplification stage: the kernels are out of line by design, and
      // its interprocedural passes (called-value propagation above all)
      // grow faster than linearly with an entry point's thousands of
      // arguments.
      llvm::ModulePassManager passes;
      passes.addPass(llvm::AlwaysInlinerPass());
      passes.addPass(llvm::createModuleToFunctionPassAdaptor(
          builder.buildFunctionSimplificationPipeline(
              levels[optLevel], llvm::ThinOrFullLTOPhase::None)));
      passes.addPass(builder.buildModuleOptimizationPipeline(
          levels[optLevel], llvm::ThinOrFullLTOPhase::None));
      passes.run(module, mam);
    }
  }

  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    llvm::errs() << "gradcomm-compile: cannot write " << path << ": "
                 << ec.message() << "\n";
    return failure();
  }
  PhaseTimer timer("llvm-codegen");
  for (llvm::Function &function : module)
    if (function.getName().starts_with("_mlir_ciface_") &&
        function.hasFnAttribute(llvm::Attribute::OptimizeNone))
      gradcomm::shortenWrapperLiveRanges(function);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, out.os(), nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    llvm::errs() << "gradcomm-compile: the target cannot emit objects\n";
    return failure();
  }
  codegen.run(module);
  out.keep();
  return success();
}

/// Functions that have a `_mlir_ciface_` wrapper are reached through it
/// only: internal linkage keeps them out of the symbol table, so a step
/// named `step` can never bind to another library's `step` (glibc exports
/// a legacy one) when loaded as a shared library, and LLVM may inline it.
static void internalizeWrappedFunctions(llvm::Module &module) {
  for (llvm::Function &function : module) {
    if (function.isDeclaration() ||
        function.getName().starts_with("_mlir_ciface_"))
      continue;
    llvm::Function *wrapper =
        module.getFunction(("_mlir_ciface_" + function.getName()).str());
    if (!wrapper)
      continue;
    function.setLinkage(llvm::GlobalValue::InternalLinkage);
    // An entry point only unpacks descriptors and calls the outlined
    // kernels and runtime functions (gradcomm-outline-kernels), one call
    // per parameter: optimizing it gains nothing, while LLVM's optimizer
    // and SelectionDAG grow faster than linearly with its size (thousands
    // of arguments, calls and result descriptors). The inner function is
    // inlined into its C wrapper (no aggregate of results crosses a call),
    // and the wrapper is compiled as is (fast instruction selection).
    function.addFnAttr(llvm::Attribute::AlwaysInline);
    wrapper->addFnAttr(llvm::Attribute::OptimizeNone);
    wrapper->addFnAttr(llvm::Attribute::NoInline);
  }
}

/// The directory holding libgradcomm_runtime.so: --runtime-dir, else the
/// install's library directory or ../lib beside this executable (the
/// build tree).
static FailureOr<std::string> findRuntimeDir(const char *argv0) {
  SmallVector<std::string, 2> candidates;
  if (!runtimeDir.empty()) {
    candidates.push_back(runtimeDir);
  } else {
    std::string exe = llvm::sys::fs::getMainExecutable(
        argv0, reinterpret_cast<void *>(&findRuntimeDir));
    StringRef bin = llvm::sys::path::parent_path(exe);
    for (StringRef libdir :
         {StringRef(GRADCOMM_INSTALL_LIBDIR), StringRef("lib")}) {
      SmallString<256> candidate(bin);
      llvm::sys::path::append(candidate, "..", libdir);
      llvm::sys::path::remove_dots(candidate, /*remove_dot_dot=*/true);
      candidates.push_back(candidate.str().str());
    }
  }
  for (const std::string &dir : candidates) {
    SmallString<256> library(dir);
    llvm::sys::path::append(library, "libgradcomm_runtime.so");
    if (llvm::sys::fs::exists(library))
      return dir;
  }
  llvm::errs() << "gradcomm-compile: --emit=shared links the runtime, but "
                  "libgradcomm_runtime.so is not in "
               << llvm::join(candidates, " or ") << "; pass --runtime-dir\n";
  return failure();
}

/// Links `object` into a shared library that records the runtime (and
/// libgradcomm_blas, from the same directory, when the step has matrix
/// products) as DT_NEEDED (and, unless --rpath=none, where to find them),
/// and refuses undefined symbols at link time rather than at load time.
static LogicalResult linkShared(StringRef object, StringRef path,
                                StringRef runtime) {
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    llvm::errs() << "gradcomm-compile: --emit=shared needs a C compiler "
                    "driver 'cc' on PATH\n";
    return failure();
  }
  std::string libraryDir = ("-L" + runtime).str();
  std::string searchPath = rpath.empty() ? runtime.str() : rpath.getValue();
  std::string rpathFlag = "-Wl,-rpath," + searchPath;
  SmallVector<StringRef> args = {*cc,
                                 "-shared",
                                 "-o",
                                 path,
                                 object,
                                 libraryDir,
                                 "-lgradcomm_runtime",
                                 "-Wl,--as-needed",
                                 "-lgradcomm_blas",
                                 "-lm",
                                 "-Wl,--no-undefined"};
  if (searchPath != "none")
    args.push_back(rpathFlag);
  std::string error;
  if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &error) !=
      0) {
    llvm::errs() << "gradcomm-compile: linking " << path << " failed " << error
                 << "\n";
    return failure();
  }
  return success();
}

static LogicalResult writeText(StringRef path,
                               llvm::function_ref<void(raw_ostream &)> write) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "gradcomm-compile: " << error << "\n";
    return failure();
  }
  write(file->os());
  file->keep();
  return success();
}

/// The pipeline, once: to memref IR, the header there, then to LLVM.
static LogicalResult compile(ModuleOp module,
                             const gradcomm::CompileOptions &options) {
  MLIRContext *context = module.getContext();
  PhaseTimer timer("mlir-pipeline");
  // --mlir-timing and the other pass-manager flags of mlir-opt apply to
  // both halves of the pipeline (one timing report for the two).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootScope = timing.getRootScope();
  PassManager toMemref(context);
  if (failed(applyPassManagerCLOptions(toMemref)))
    return failure();
  TimingScope memrefScope = rootScope.nest("to memref");
  toMemref.enableTiming(memrefScope);
  gradcomm::buildCompilePipeline(toMemref, options,
                                 gradcomm::hasShardingAnnotations(module),
                                 /*stopAfterBufferization=*/true);
  if (failed(toMemref.run(module)))
    return failure();
  // The header describes the signatures a trainer calls: those after
  // bufferization (results that are an argument's buffer are gone).
  if (!headerFile.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (failed(gradcomm::emitCHeader(module, os, inputFile)) ||
        failed(writeText(headerFile, [&](raw_ostream &out) { out << text; })))
      return failure();
  }
  memrefScope.stop();
  PassManager toLLVM(context);
  if (failed(applyPassManagerCLOptions(toLLVM)))
    return failure();
  TimingScope llvmScope = rootScope.nest("to LLVM dialect");
  toLLVM.enableTiming(llvmScope);
  gradcomm::buildLLVMLoweringPipeline(toLLVM, /*exportCInterface=*/true,
                                      options.blasMatmuls);
  return toLLVM.run(module);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  gradcomm::registerAllGradCommPasses();

  // The strategy options belong to the pipeline option structs; take them
  // out before the driver's own flags are parsed.
  gradcomm::CompileOptions options;
  SmallVector<const char *> args(argv, argv + argc);
  FailureOr<std::vector<PipelineFlag>> pipelineFlags =
      takePipelineFlags(args, options);
  if (failed(pipelineFlags))
    return 1;
  // cl::extrahelp keeps a pointer: the text must outlive parsing.
  static const std::string strategyHelpText = strategyOptionsHelp();
  cl::extrahelp strategyHelp(strategyHelpText.c_str());
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      args.size(), args.data(),
      "gradcomm-compile: compile an MLIR training step with GradComm "
      "communication into host code\n");
  options.strategy = strategy;
  if (onError != "abort" && onError != "return") {
    llvm::errs() << "gradcomm-compile: --on-error must be 'abort' or "
                    "'return', got '"
                 << onError << "'\n";
    return 1;
  }
  options.onError = onError;
  if (bucketElements < 0) {
    llvm::errs() << "gradcomm-compile: --bucket-elements must be >= 0 (0: "
                    "off), got "
                 << bucketElements << "\n";
    return 1;
  }
  options.bucketElements = bucketElements;
  options.overlap = overlap;
  options.blasMatmuls = blasMatmuls;
  if (failed(applyPipelineFlags(*pipelineFlags, options)))
    return 1;

  std::string runtime;
  if (emit == Emit::Shared) {
    FailureOr<std::string> found = findRuntimeDir(argv[0]);
    if (failed(found))
      return 1;
    runtime = *found;
  }

  DialectRegistry registry;
  gradcomm::registerAllGradCommDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "gradcomm-compile: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1; // the parser reported where and why

  if (failed(compile(*module, options)))
    return 1;

  if (emit == Emit::Mlir)
    return failed(
        writeText(outputFile, [&](raw_ostream &os) { module->print(os); }));

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    PhaseTimer timer("translate-to-llvm-ir");
    llvmModule = translateModuleToLLVMIR(*module, llvmContext, "gradcomm_step");
  }
  if (!llvmModule) {
    llvm::errs() << "gradcomm-compile: translation to LLVM IR failed\n";
    return 1;
  }
  internalizeWrappedFunctions(*llvmModule);
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      prepareTarget(*llvmModule);
  if (failed(machine))
    return 1;
  if (emit == Emit::Llvm)
    return failed(writeText(
        outputFile, [&](raw_ostream &os) { llvmModule->print(os, nullptr); }));
  if (emit == Emit::Obj)
    return failed(writeObject(*llvmModule, **machine, outputFile)) ? 1 : 0;

  std::string object = outputFile + ".o";
  LogicalResult linked =
      success(succeeded(writeObject(*llvmModule, **machine, object)) &&
              succeeded(linkShared(object, outputFile, runtime)));
  llvm::sys::fs::remove(object);
  return failed(linked) ? 1 : 0;
}
