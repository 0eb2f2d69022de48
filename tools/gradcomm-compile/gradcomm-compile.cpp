//===- gradcomm-compile.cpp - MLIR training step -> object file -----------===//
//
// Part of the GradComm project.
//
// Runs the whole pipeline in process: partitioning (when the input carries
// shard.shard annotations), the chosen rewrite (dense | scalecom |
// local-topk | gossip), the lowering to the runtime and to LLVM, LLVM's O2,
// and host code generation. Writes MLIR, LLVM IR, an object file or a shared
// library, and optionally a C header declaring the entry points.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.h"
#include "gradcomm/InitAll.h"
#include "gradcomm/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

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

enum class Strategy { Dense, ScaleCom, LocalTopk, Gossip };
static cl::opt<Strategy> strategy(
    "strategy", cl::desc("How gradient all-reduces are communicated"),
    cl::init(Strategy::ScaleCom),
    cl::values(clEnumValN(Strategy::Dense, "dense", "dense all-reduce"),
               clEnumValN(Strategy::ScaleCom, "scalecom",
                          "ScaleCom CLT-k compression"),
               clEnumValN(Strategy::LocalTopk, "local-topk",
                          "local top-k + all-gather baseline"),
               clEnumValN(Strategy::Gossip, "gossip", "gossiping SGD")),
    cl::cat(category));

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

// ScaleCom / local top-k options, named as the pass options.
static cl::opt<double> ratio("ratio", cl::desc("Compression ratio N / k"),
                             cl::init(100.0), cl::cat(category));
static cl::opt<int64_t> k("k", cl::desc("Fixed k (0: use ratio)"), cl::init(0),
                          cl::cat(category));
static cl::opt<double> beta("beta", cl::desc("Low-pass coefficient (0, 1]"),
                            cl::init(1.0), cl::cat(category));
static cl::opt<std::string> selection("selection", cl::desc("exact | chunk"),
                                      cl::init("exact"), cl::cat(category));
static cl::opt<int64_t> chunkSize("chunk-size",
                                  cl::desc("Chunk length (0: round(ratio))"),
                                  cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    minElements("min-elements",
                cl::desc("Tensors with fewer elements stay dense"),
                cl::init(1024), cl::cat(category));
static cl::opt<bool> report("report",
                            cl::desc("Say per all-reduce what was done"),
                            cl::init(false), cl::cat(category));

// Gossip options.
static cl::opt<std::string> schedule("schedule",
                                     cl::desc("matching | ring | hypercube"),
                                     cl::init("matching"), cl::cat(category));
static cl::opt<double> mixing("mixing", cl::desc("Mixing weight (0, 1)"),
                              cl::init(0.5), cl::cat(category));
static cl::opt<int64_t> seed("seed", cl::desc("Shared schedule seed"),
                             cl::init(0), cl::cat(category));
static cl::opt<int64_t> period("period", cl::desc("Exchange every p steps"),
                               cl::init(1), cl::cat(category));

//===----------------------------------------------------------------------===//
// Pipeline
//===----------------------------------------------------------------------===//

/// The pass pipeline for the chosen strategy, as a textual pipeline built
/// from the same option structs the tests use.
static LogicalResult
buildPipeline(PassManager &pm, ModuleOp module,
              const gradcomm::LoweringPipelineOptions &lowering) {
  bool annotated = false;
  module.walk([&](shard::ShardOp) { annotated = true; });
  if (annotated)
    gradcomm::buildPartitionPipeline(pm);

  switch (strategy) {
  case Strategy::Dense:
    break;
  case Strategy::ScaleCom:
  case Strategy::LocalTopk: {
    gradcomm::ScaleComPipelineOptions options;
    options.ratio = ratio;
    options.k = k;
    options.beta = beta;
    if (selection != "exact" && selection != "chunk") {
      llvm::errs() << "gradcomm-compile: --selection must be exact or "
                      "chunk, got '"
                   << selection << "'\n";
      return failure();
    }
    options.selection = selection == "chunk" ? gradcomm::Selection::Chunk
                                             : gradcomm::Selection::Exact;
    options.chunkSize = chunkSize;
    options.minElements = minElements;
    options.report = report;
    options.compressor =
        strategy == Strategy::LocalTopk ? "local-topk" : "cltk";
    pm.addPass(gradcomm::createScaleComRewritePass(options.toPassOptions()));
    break;
  }
  case Strategy::Gossip: {
    gradcomm::GossipPipelineOptions options;
    std::optional<gradcomm::Schedule> parsed =
        gradcomm::symbolizeSchedule(schedule);
    if (!parsed) {
      llvm::errs() << "gradcomm-compile: --schedule must be matching, ring "
                      "or hypercube, got '"
                   << schedule << "'\n";
      return failure();
    }
    options.schedule = *parsed;
    options.mixing = mixing;
    options.seed = seed;
    options.period = period;
    options.report = report;
    pm.addPass(gradcomm::createGossipRewritePass(options.toPassOptions()));
    break;
  }
  }
  gradcomm::buildLoweringPipeline(pm, lowering);
  return success();
}

//===----------------------------------------------------------------------===//
// C header
//===----------------------------------------------------------------------===//

/// C element type of a tensor, or empty if the header cannot express it.
static std::string cElementType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isInteger(32))
    return "int32_t";
  if (type.isInteger(64) || type.isIndex())
    return "int64_t";
  return "";
}

/// The descriptor struct name of a ranked memref type.
static std::string descriptorName(ShapedType type) {
  std::string element;
  llvm::raw_string_ostream os(element);
  os << type.getElementType();
  return "gradcomm_memref_" + element + "_" + std::to_string(type.getRank()) +
         "d";
}

/// Writes a C header declaring `_mlir_ciface_<name>` for every public
/// function, from the tensor signatures recorded before lowering.
static LogicalResult writeHeader(ArrayRef<func::FuncOp> functions,
                                 StringRef path) {
  std::string body, structs;
  llvm::StringSet<> declared;
  auto descriptor = [&](Type type, Location loc) -> FailureOr<std::string> {
    auto shaped = dyn_cast<ShapedType>(type);
    if (shaped && !shaped.hasRank())
      shaped = nullptr;
    std::string element = shaped ? cElementType(shaped.getElementType()) : "";
    if (element.empty())
      return emitError(loc) << "gradcomm-compile --emit-header: cannot "
                               "express "
                            << type << " in C";
    std::string name = descriptorName(shaped);
    if (declared.insert(name).second) {
      structs += "typedef struct " + name + " {\n  " + element +
                 " *allocated;\n  " + element +
                 " *aligned;\n  int64_t offset;\n";
      if (shaped.getRank() > 0)
        structs += "  int64_t sizes[" + std::to_string(shaped.getRank()) +
                   "];\n  int64_t strides[" + std::to_string(shaped.getRank()) +
                   "];\n";
      structs += "} " + name + ";\n\n";
    }
    return name;
  };

  for (func::FuncOp func : functions) {
    FunctionType type = func.getFunctionType();
    std::string name = func.getName().str();
    std::vector<std::string> params;
    if (type.getNumResults() == 1) {
      FailureOr<std::string> result =
          descriptor(type.getResult(0), func.getLoc());
      if (failed(result))
        return failure();
      params.push_back(*result + " *result");
    } else if (type.getNumResults() > 1) {
      std::string resultStruct = name + "_results";
      std::string fields;
      for (auto [i, resultType] : llvm::enumerate(type.getResults())) {
        FailureOr<std::string> result = descriptor(resultType, func.getLoc());
        if (failed(result))
          return failure();
        fields += "  " + *result + " r" + std::to_string(i) + ";\n";
      }
      structs += "typedef struct " + resultStruct + " {\n" + fields + "} " +
                 resultStruct + ";\n\n";
      params.push_back(resultStruct + " *results");
    }
    for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
      FailureOr<std::string> arg = descriptor(argType, func.getLoc());
      if (failed(arg))
        return failure();
      params.push_back(*arg + " *arg" + std::to_string(i));
    }
    body += "/// " + name +
            ": results are fresh buffers the caller owns "
            "(gradcomm_free_buffer(result->allocated));\n/// inputs may be "
            "updated in place.\nvoid _mlir_ciface_" +
            name + "(";
    for (size_t i = 0; i < params.size(); ++i)
      body += (i ? ", " : "") + params[i];
    body += ");\n\n";
  }

  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "gradcomm-compile: " << error << "\n";
    return failure();
  }
  file->os() << "/* Generated by gradcomm-compile from " << inputFile
             << ". Link with libgradcomm_runtime. */\n"
             << "#ifndef GRADCOMM_GENERATED_STEP_H\n"
             << "#define GRADCOMM_GENERATED_STEP_H\n\n"
             << "#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" "
                "{\n#endif\n\n"
             << structs << body << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  file->keep();
  return success();
}

//===----------------------------------------------------------------------===//
// Code generation
//===----------------------------------------------------------------------===//

static LogicalResult writeObject(llvm::Module &module, StringRef path) {
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
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Default));
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());

  // LLVM's O2 on the generated loops.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(machine.get());
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(module, mam);

  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    llvm::errs() << "gradcomm-compile: cannot write " << path << ": "
                 << ec.message() << "\n";
    return failure();
  }
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

static LogicalResult linkShared(StringRef object, StringRef path) {
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    llvm::errs() << "gradcomm-compile: --emit=shared needs a C compiler "
                    "driver 'cc' on PATH\n";
    return failure();
  }
  llvm::StringRef args[] = {*cc, "-shared", "-o", path, object};
  std::string error;
  if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &error) !=
      0) {
    llvm::errs() << "gradcomm-compile: linking " << path << " failed " << error
                 << "\n";
    return failure();
  }
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  gradcomm::registerAllGradCommPasses();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "gradcomm-compile: compile an MLIR training step with GradComm "
      "communication into host code\n");

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

  PassManager pm(&context);
  if (failed(buildPipeline(pm, *module, gradcomm::LoweringPipelineOptions())))
    return 1;

  // The header describes the signatures a trainer calls: those after
  // bufferization (results that are an argument's buffer are gone), from
  // the same pipeline stopped there.
  if (!headerFile.empty()) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager prefix(&context);
    gradcomm::LoweringPipelineOptions stop;
    stop.stopAfterBufferization = true;
    if (failed(buildPipeline(prefix, *copy, stop)) || failed(prefix.run(*copy)))
      return 1;
    SmallVector<func::FuncOp> functions;
    for (auto func : copy->getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        functions.push_back(func);
    if (failed(writeHeader(functions, headerFile)))
      return 1;
  }

  if (failed(pm.run(*module)))
    return 1;

  if (emit == Emit::Mlir) {
    auto file = openOutputFile(outputFile, &error);
    if (!file) {
      llvm::errs() << "gradcomm-compile: " << error << "\n";
      return 1;
    }
    module->print(file->os());
    file->keep();
    return 0;
  }

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, "gradcomm_step");
  if (!llvmModule) {
    llvm::errs() << "gradcomm-compile: translation to LLVM IR failed\n";
    return 1;
  }
  if (emit == Emit::Llvm) {
    auto file = openOutputFile(outputFile, &error);
    if (!file) {
      llvm::errs() << "gradcomm-compile: " << error << "\n";
      return 1;
    }
    llvmModule->print(file->os(), nullptr);
    file->keep();
    return 0;
  }
  if (emit == Emit::Obj)
    return failed(writeObject(*llvmModule, outputFile)) ? 1 : 0;

  std::string object = outputFile + ".o";
  if (failed(writeObject(*llvmModule, object)) ||
      failed(linkShared(object, outputFile)))
    return 1;
  llvm::sys::fs::remove(object);
  return 0;
}
